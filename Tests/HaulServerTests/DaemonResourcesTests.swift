import Foundation
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import Testing

/// `Daemon.run` releases its engine however it ends: its task cancelled while a download runs
/// (its HTTP client made), or before it listens. AsyncHTTPClient's client and sqlite-nio's
/// connection trap in their deinit when they were not shut down, so a daemon that let its
/// manager go without its shutdown took the whole test process down (signal 4); SQLite removes
/// the state database's WAL file only when its last connection closes.
@Suite(.timeLimit(.minutes(1))) struct DaemonResourcesTests {
    static func configuration(_ root: String) -> Daemon.Configuration {
        Daemon.Configuration(port: 0, home: root + "/home", downloadDirectory: root + "/downloads")
    }

    /// What a cancelled `Daemon.run` may end with: nothing, or the cancellation.
    static func expectCancelledEnd(_ result: Result<Void, any Error>) {
        if case .failure(let error) = result {
            #expect(error is CancellationError, "\(error)")
        }
    }

    @Test func aDaemonCancelledWhileADownloadRunsClosesItsStore() async throws {
        let root = NSTemporaryDirectory() + "haul-daemon-cancel-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await TestServer.start()
        server.setRoute("/slow", Route(payload: Payload(seed: 48, length: 4_000_000), throttle: 200_000))
        let api = try await DaemonAPI.start(Self.configuration(root))
        let added = try await api.add(server.url("/slow"), fileName: "slow.bin")
        var view = try await api.download(added.id)
        for _ in 0..<600 where view.completedLength == 0 {
            try await Task.sleep(for: .milliseconds(100))
            view = try await api.download(added.id)
        }
        #expect(view.status == .running && view.completedLength > 0, "running, its client made: \(view)")
        api.task.cancel()
        Self.expectCancelledEnd(await api.task.result)
        #expect(FileManager.default.fileExists(atPath: root + "/home/haul.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: root + "/home/haul.sqlite-wal"), "the store is closed")
        try await server.shutdown()
    }

    /// Cancelled as soon as it listens, its queue restored and no download made: the store
    /// opened before the service group started is closed all the same.
    @Test func aDaemonCancelledAsItStartsClosesItsStore() async throws {
        let root = NSTemporaryDirectory() + "haul-daemon-cancel-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let api = try await DaemonAPI.start(Self.configuration(root))
        api.task.cancel()
        Self.expectCancelledEnd(await api.task.result)
        #expect(FileManager.default.fileExists(atPath: root + "/home/haul.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: root + "/home/haul.sqlite-wal"), "the store is closed")
    }
}
