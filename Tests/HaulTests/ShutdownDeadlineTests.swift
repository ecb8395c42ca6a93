import HaulCore
import HaulTesting
import NIOConcurrencyHelpers
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
                ids.append(
                    try await harness.manager.add(harness.request("/slow?n=\(index)", output: "s\(index).bin")).id)
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

    /// The deadline is on the injected clock: with a manual one, a shutdown whose run cannot end
    /// (its fsync held) returns only once the test advances the clock past the deadline, and the
    /// run is left `running` for the next start.
    @Test func theDeadlineFollowsTheInjectedClock() async throws {
        let clock = ManualClock()
        let gate = Gate()
        var calls = FileCalls.system
        calls.sync = { descriptor, path in
            if path.contains("/held") { gate.pass(path, limit: 30) }
            return FileCalls.system.sync(descriptor, path)
        }
        try await withHarness(maxConcurrent: 1, clock: ClockAdapter(clock), fileCalls: calls) { harness in
            harness.server.setRoute("/held", Route(payload: Payload(seed: 34, length: 64 << 10)))
            let outcomes = harness.manager.outcomes()
            let held = try await harness.manager.add(harness.request("/held", output: "held"))
            #expect(await gate.waitForArrivals { !$0.isEmpty })
            let returned = NIOLockedValueBox(false)
            let shutdown = Task {
                await harness.manager.shutdown(deadline: .seconds(5))
                returned.withLockedValue { $0 = true }
            }
            let deadline = clock.now.advanced(by: .seconds(5))
            #expect(await clock.waitForSleepers { $0.contains(deadline) })
            // Nothing but the clock can end the wait: the run is held in its fsync.
            #expect(returned.withLockedValue { $0 } == false)
            clock.advance(by: .seconds(5))
            await shutdown.value
            var seen: [DownloadID: DownloadStatus] = [:]
            for await outcome in outcomes { seen[outcome.id] = outcome.status }
            #expect(seen == [held.id: .running])
            gate.open()
        }
    }
}
