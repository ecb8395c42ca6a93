import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// `shutdown(deadline:)`: the runs are told to stop, and it returns once every run has ended
/// and its outcome is out (or at the deadline); the outcome stream ends only after them.
@Suite(.timeLimit(.minutes(1))) struct ShutdownDeadlineTests {
    let payload = Payload(seed: 33, length: 2_000_000)

    @Test func everyOutcomeIsOutBeforeTheStreamEnds() async throws {
        try await withHarness(maxConcurrent: 2) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 100_000, then: .stallAfter(500_000)))
            let outcomes = harness.manager.outcomes()
            let events = harness.manager.events()
            var ids: [DownloadID] = []
            for index in 0..<3 {
                ids.append(try await harness.manager.add(harness.request("/slow?n=\(index)", output: "s\(index).bin")).id)
            }
            await harness.waitForProgress(of: ids[0], beyond: 0, in: events)
            // A deadline far beyond what stopping takes: it returns when the runs end.
            await harness.manager.shutdown(deadline: .seconds(50))
            #expect(await harness.manager.handles.isEmpty)
            var seen: [DownloadID: DownloadStatus] = [:]
            for await outcome in outcomes { seen[outcome.id] = outcome.status }
            // Two ran and were stopped (left to resume), one waited (left queued).
            #expect(Set(seen.keys) == Set(ids), "\(seen)")
            #expect(seen.values.filter { $0 == .queued }.count == 1, "\(seen)")
        }
    }
}
