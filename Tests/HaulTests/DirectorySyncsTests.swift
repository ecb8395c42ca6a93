import Foundation
import HaulCore
import HaulTesting
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// Files published into one directory together share its fsync (`DirectorySyncs`), and each
/// caller still returns only after an fsync that began after it asked.
@Suite(.timeLimit(.minutes(1))) struct DirectorySyncsTests {
    static func directory() throws -> (DownloadDirectory, String) {
        let path = NSTemporaryDirectory() + "haul-syncs-\(UUID().uuidString)"
        let directory = try #require(try DownloadDirectory.resolve(path, roots: nil, create: true))
        return (directory, path)
    }

    @Test func callersWhileASyncRunsShareTheNextOne() async throws {
        let (directory, path) = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let gate = Gate()
        let calls = NIOLockedValueBox(0)
        let joined = Watched(0)
        let syncs = DirectorySyncs(
            sync: { directory in
                if calls.withLockedValue({
                    $0 += 1
                    return $0
                }) == 1 {
                    gate.pass("first", limit: 30)
                }
                try directory.sync()
            }, joined: { joined.withLockedValue { $0 += 1 } })
        let io = DiskIO()
        let first = Task { try await syncs.sync(directory, io: io) }
        #expect(await gate.waitForArrivals { $0.count == 1 })
        // Five more publishes while the first fsync is held: they wait for the next one.
        let others = (0..<5).map { _ in Task { try await syncs.sync(directory, io: io) } }
        // Told as each caller joins the line: the first one, then the five.
        await joined.wait { $0 >= 6 }
        #expect(await syncs.waitingCount(directory) == 5)
        gate.open()
        try await first.value
        for other in others { try await other.value }
        #expect(calls.withLockedValue { $0 } == 2, "one fsync for the first, one for the five that came during it")
        #expect(!gate.expired)
        // Alone again: its own fsync.
        try await syncs.sync(directory, io: io)
        #expect(calls.withLockedValue { $0 } == 3)
    }

    @Test func aFailedSyncFailsEveryoneItWasForAndNoOneAfter() async throws {
        let (directory, path) = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let gate = Gate()
        let calls = NIOLockedValueBox(0)
        let joined = Watched(0)
        let syncs = DirectorySyncs(
            sync: { _ in
                let call = calls.withLockedValue {
                    $0 += 1
                    return $0
                }
                if call == 1 { gate.pass("first", limit: 30) }
                if call == 2 { throw HaulError(.fileSystem, "cannot sync directory: input/output error") }
            }, joined: { joined.withLockedValue { $0 += 1 } })
        let io = DiskIO()
        let first = Task { try await syncs.sync(directory, io: io) }
        #expect(await gate.waitForArrivals { $0.count == 1 })
        let failing = (0..<3).map { _ in Task { try await syncs.sync(directory, io: io) } }
        // The first caller and the three have joined the line.
        await joined.wait { $0 >= 4 }
        #expect(await syncs.waitingCount(directory) == 3)
        gate.open()
        try await first.value
        for task in failing {
            await #expect(throws: HaulError.self) { try await task.value }
        }
        try await syncs.sync(directory, io: io)
        #expect(calls.withLockedValue { $0 } == 3)
    }
}
