import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// A download whose bytes are all in gives its `-j` slot to the next one while it verifies,
/// publishes and saves (`QueueSlots.finishing`): a disk slow to make one file durable does not
/// hold the queue's only slot.
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
            #expect(await gate.waitForArrivals { !$0.isEmpty }, "the first download's sync reached the disk")

            // With -j 1, the second download runs from start to end while the first one's
            // fsync is held.
            #expect(try await harness.manager.outcome(of: next.id).status == .completed)
            #expect(second.mismatch(inFileAt: harness.directory + "/second") == nil)
            #expect(!gate.isOpen, "the second download waited for the first one's disk")
            #expect(
                FileManager.default.fileExists(atPath: harness.directory + "/first") == false,
                "not published before it is durable")

            gate.open()
            #expect(try await harness.manager.outcome(of: held.id).status == .completed)
            #expect(first.mismatch(inFileAt: harness.directory + "/first") == nil)
        }
        #expect(!gate.expired, "the held sync had to be let go by the gate's own limit")
    }
}
