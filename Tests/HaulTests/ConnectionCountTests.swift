import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

/// Whether a download finds its connection count is part of its stored request: it survives the
/// store, and naming a count later makes it a fixed one.
@Suite(.timeLimit(.minutes(1))) struct ConnectionCountTests {
    @Test func aGrowingDownloadIsStoredSoAndANamedCountFixesIt() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // The one slot is taken, so the next add waits, queued, where its count may change.
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 44, length: 100_000_000), throttle: 20_000))
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)

            var request = try harness.request("/grows")
            request.connections = 4
            request.growsConnections = true
            let waiting = try await harness.manager.add(request)
            let stored = try #require(try await harness.store.record(waiting.id))
            #expect(stored.request.growsConnections && stored.request.connections == 4)

            try await harness.manager.setConnections(3, for: waiting.id)
            let fixed = try #require(try await harness.store.record(waiting.id))
            #expect(!fixed.request.growsConnections && fixed.request.connections == 3)
            try await harness.manager.pause(running.id)
        }
    }
}
