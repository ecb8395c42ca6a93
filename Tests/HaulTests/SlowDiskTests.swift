import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// A disk that stops answering for some downloads (issue 20): their writes are held in the real
/// write path (`FileCalls.write`, called by the writer's thread) while another download runs from
/// start to end. No blocking file call runs on Swift's cooperative pool, and no download's disk
/// holds back another's threads.
@Suite(.timeLimit(.minutes(4))) struct SlowDiskTests {
    /// More downloads held than the cooperative pool has threads: were their writes made on it,
    /// nothing else could run until the gate's limit opened it, and the test would fail on that.
    static let heldCount = ProcessInfo.processInfo.activeProcessorCount + 1

    /// The real system calls, except that writes to files named `held-*` wait at `gate`.
    static func holding(_ gate: Gate) -> FileCalls {
        var calls = FileCalls.system
        calls.write = { descriptor, vectors, count, offset, path in
            if path.contains("/held-") { gate.pass(path) }
            return FileCalls.system.write(descriptor, vectors, count, offset, path)
        }
        return calls
    }

    @Test func writesHeldByTheDiskStallNoOtherDownload() async throws {
        let gate = Gate()
        // 3 MiB: more than a held download may read ahead of its disk, so its connection waits too.
        let payload = Payload(seed: 20, length: 3 << 20)
        try await withHarness(maxConcurrent: Self.heldCount + 1, fileCalls: Self.holding(gate)) { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            var held: [DownloadRecord] = []
            for index in 0..<Self.heldCount {
                held.append(try await harness.manager.add(harness.request("/file", output: "held-\(index)")))
            }
            #expect(
                await gate.waitForArrivals { Set($0).count == Self.heldCount },
                "every held download reached its disk")

            // Meanwhile another download runs from start to end, over several connections, and
            // the manager answers.
            let free = try await harness.download(harness.request("/file", output: "free", connections: 4))
            #expect(free.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/free") == nil)
            #expect(try await harness.manager.ids(status: .running).count == Self.heldCount)
            #expect(!gate.isOpen, "the other download finished while the held writes were still held")

            gate.open()
            for (index, record) in held.enumerated() {
                #expect(try await harness.manager.outcome(of: record.id).status == .completed)
                #expect(payload.mismatch(inFileAt: harness.directory + "/held-\(index)") == nil)
            }
        }
        #expect(!gate.expired, "a held write had to be let go by the gate's own limit")
    }
}
