import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// Requests in flight past `-j` (issue 48, `SlotProbes`), through the real manager, transport and
/// store against the test server: with the one slot held by a slow large download, small files
/// behind it are fetched meanwhile, and a large one behind it is sent, answers, and waits for the
/// slot with its body unread, then reads that same response (no second request) once it has it.
@Suite(.timeLimit(.minutes(2))) struct RequestsInFlightTests {
    @Test func smallFilesPassASlowLargeOneAndALargeOneWaitsForTheSlot() async throws {
        try await withHarness(maxConcurrent: 1, sendsPastLimit: true) { harness in
            // 2 MiB at 64 KiB/s: half a minute, the slot held all along unless the test removes it.
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 1, length: 2 << 20), throttle: 64 << 10))
            harness.server.setRoute("/behind", Route(payload: Payload(seed: 2, length: 3 << 20)))
            for index in 0..<8 {
                harness.server.setRoute("/s\(index)", Route(payload: Payload(seed: 10 + UInt64(index), length: 16_384)))
            }
            let slow = try await harness.manager.add(try harness.request("/slow"))
            let behind = try await harness.manager.add(try harness.request("/behind"))
            var small: [DownloadID] = []
            for index in 0..<8 { small.append(try await harness.manager.add(try harness.request("/s\(index)")).id) }
            for id in small { #expect(try await harness.manager.outcome(of: id).status == .completed) }
            for index in 0..<8 {
                #expect(
                    Payload(seed: 10 + UInt64(index), length: 16_384).mismatch(
                        inFileAt: harness.directory + "/s\(index)") == nil)
            }
            // Every small file is in while the slow one still holds the slot.
            #expect(try await harness.manager.record(slow.id)?.status == .running)
            // The large one behind was sent and answered, and waits: nothing of it written.
            #expect(await harness.server.wait { $0.requests(to: "/behind").count == 1 })
            let waiting = try #require(try await harness.manager.record(behind.id))
            #expect(waiting.status != .completed)
            #expect(waiting.segments.reduce(0) { $0 + $1.written } == 0)
            // The slot frees: the large one reads the response it holds, asking nothing again.
            try await harness.manager.remove(slow.id, deleteFile: true)
            #expect(try await harness.manager.outcome(of: behind.id).status == .completed)
            #expect(harness.server.requests(to: "/behind").count == 1)
            #expect(Payload(seed: 2, length: 3 << 20).mismatch(inFileAt: harness.directory + "/behind") == nil)
        }
    }

    @Test func withoutItTheLimitIsExact() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 1, length: 2 << 20), throttle: 64 << 10))
            harness.server.setRoute("/s0", Route(payload: Payload(seed: 3, length: 16_384)))
            let slow = try await harness.manager.add(try harness.request("/slow"))
            let small = try await harness.manager.add(try harness.request("/s0"))
            #expect(await harness.server.wait { $0.bodyBytesSent(to: "/slow") > 0 })
            #expect(harness.server.requests(to: "/s0").isEmpty)
            #expect(try await harness.manager.record(small.id)?.status == .queued)
            try await harness.manager.remove(slow.id, deleteFile: true)
            #expect(try await harness.manager.outcome(of: small.id).status == .completed)
        }
    }
}
