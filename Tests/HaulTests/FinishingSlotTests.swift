import Foundation
@testable import Haul
import HaulCore
import HaulTesting
import Testing

/// A download gives its `-j` slot to the next one once it needs it no more
/// (`QueueSlots.finishing`): when its bytes are all in, while it verifies, publishes and saves
/// (a disk slow to make one file durable does not hold the queue's only slot), and when all that
/// is left is a small body whose answer came (a far server's small files are asked for together).
@Suite(.timeLimit(.minutes(2))) struct FinishingSlotTests {
    /// The real system calls, except that syncing the file named `first` waits at `gate`.
    static func holdingSync(_ gate: Gate) -> FileCalls {
        var calls = FileCalls.system
        calls.sync = { descriptor, path in
            if path.contains("/first") { gate.pass(path, limit: 30) }
            return FileCalls.system.sync(descriptor, path)
        }
        return calls
    }

    @Test func theNextDownloadTransfersWhileTheFirstIsMadeDurable() async throws {
        let gate = Gate()
        let first = Payload(seed: 41, length: 64 << 10)
        let second = Payload(seed: 42, length: 64 << 10)
        try await withHarness(maxConcurrent: 1, fileCalls: Self.holdingSync(gate)) { harness in
            harness.server.setRoute("/first", Route(payload: first))
            harness.server.setRoute("/second", Route(payload: second))
            let held = try await harness.manager.add(harness.request("/first", output: "first"))
            let next = try await harness.manager.add(harness.request("/second", output: "second"))
            #expect(try await eventually { !gate.arrivals.isEmpty }, "the first download's sync reached the disk")

            // With -j 1, the second download runs from start to end while the first one's
            // fsync is held.
            #expect(try await harness.manager.outcome(of: next.id).status == .completed)
            #expect(second.mismatch(inFileAt: harness.directory + "/second") == nil)
            #expect(!gate.isOpen, "the second download waited for the first one's disk")
            #expect(FileManager.default.fileExists(atPath: harness.directory + "/first") == false, "not published before it is durable")

            gate.open()
            #expect(try await harness.manager.outcome(of: held.id).status == .completed)
            #expect(first.mismatch(inFileAt: harness.directory + "/first") == nil)
        }
        #expect(!gate.expired, "the held sync had to be let go by the gate's own limit")
    }

    @Test func smallFilesAreAskedForPastTheLimitOnceTheirAnswersCame() async throws {
        let payload = Payload(seed: 43, length: 16 << 10)
        try await withHarness(maxConcurrent: 1) { harness in
            // Heads go out at once; the bodies wait until all five requests have come (or 5 s).
            var route = Route(payload: payload)
            route.bodyGate = BodyGate(requests: 5, atMost: .seconds(5))
            harness.server.setRoute("/small", route)
            var ids: [DownloadID] = []
            for index in 0..<5 {
                ids.append(try await harness.manager.add(harness.request("/small", output: "small-\(index)")).id)
            }
            for id in ids { #expect(try await harness.manager.outcome(of: id).status == .completed) }
            // With -j 1 all five were in flight at once: each gave its slot to the next one as
            // soon as its answer said 16 KiB.
            #expect(harness.server.peakConcurrentResponses(to: "/small") == 5)
            for index in 0..<5 { #expect(payload.mismatch(inFileAt: harness.directory + "/small-\(index)") == nil) }
        }
    }

    @Test func aLargeFileKeepsItsSlotUntilItsBytesAreIn() async throws {
        let payload = Payload(seed: 44, length: 2 << 20)
        try await withHarness(maxConcurrent: 1) { harness in
            var route = Route(payload: payload)
            route.bodyGate = BodyGate(requests: 2, atMost: .seconds(1))
            harness.server.setRoute("/large", route)
            let first = try await harness.manager.add(harness.request("/large", output: "large-0"))
            let second = try await harness.manager.add(harness.request("/large", output: "large-1"))
            #expect(try await harness.manager.outcome(of: first.id).status == .completed)
            #expect(try await harness.manager.outcome(of: second.id).status == .completed)
            #expect(harness.server.peakConcurrentResponses(to: "/large") == 1, "2 MiB is no small body")
        }
    }
}
