import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

/// Status reads of a running download come from memory (the record its run last stored), and
/// say what the store says: a change made while it runs shows at once, and once it ends the
/// store's row is the answer again.
@Suite(.timeLimit(.minutes(2))) struct LiveRecordTests {
    @Test func aRunningDownloadIsReadFromItsRun() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 51, length: 2_000_000), throttle: 400_000))
            let events = harness.manager.events()
            let added = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: added.id, beyond: 100_000, in: events)
            // The run stored its record (running) before it told its start, so before any
            // progress: the read is its copy.
            #expect(harness.manager.live.record(added.id) != nil)
            let running = try #require(try await harness.manager.record(added.id))
            #expect(running.status == .running)
            #expect(try await harness.manager.records([added.id]).map(\.id) == [added.id])

            try await harness.manager.setMaxBytesPerSecond(300_000, for: added.id)
            #expect(
                try await harness.manager.record(added.id)?.request.maxBytesPerSecond == 300_000,
                "a change stored while it runs shows at once")

            try await harness.manager.pause(added.id)
            #expect(harness.manager.live.record(added.id) == nil, "a run that ended leaves nothing behind")
            let stored = try await harness.store.record(added.id)
            #expect(try await harness.manager.record(added.id) == stored)
            #expect(stored?.status == .paused)
        }
    }
}
