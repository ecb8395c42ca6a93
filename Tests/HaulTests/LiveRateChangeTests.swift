import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// A running download's own limit changed while it runs (aria2's `changeOption` with
/// `max-download-limit`, the API's `PATCH /downloads/ID`): the same run goes on under the new
/// limit, on the manual clock, without a restart or a new request.
@Suite(.timeLimit(.minutes(5))) struct LiveRateChangeTests {
    @Test func liftingARunningDownloadsLimitLetsItFinishWithoutRestartingOrAdvancingTheClock() async throws {
        let clock = ManualClock()
        try await withHarness(clock: ClockAdapter(clock)) { harness in
            let payload = Payload(seed: 41, length: 400_000)
            harness.server.setRoute("/file", Route(payload: payload))
            var request = try harness.request("/file")
            request.maxBytesPerSecond = 1000
            let events = harness.manager.events()
            let record = try await harness.manager.add(request)
            // At 1000 bytes per second the first chunk costs many seconds: the run waits on the clock.
            #expect(await clock.waitForSleepers { $0.contains { $0 >= clock.now.advanced(by: .seconds(1)) } })
            #expect(try await harness.manager.download(record.id).status == .running)
            try await harness.manager.setMaxBytesPerSecond(nil, for: record.id)
            let outcome = try await harness.waitForEnd(of: record.id, in: events)
            #expect(outcome.final.isCompleted)
            #expect(
                clock.now == ManualClock.Instant(offset: .zero), "finished without the clock moving: the limit was gone"
            )
            #expect(!outcome.restarted)
            #expect(outcome.events.filter { if case .started = $0 { true } else { false } }.count == 1, "one run")
            #expect(harness.server.requests(to: "/file").count == 1, "one request: nothing was cut and asked again")
            #expect(
                try await harness.manager.download(record.id).request.maxBytesPerSecond == nil, "the change is stored")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func loweringARunningDownloadsLimitMakesItsNextWaitLonger() async throws {
        let clock = ManualClock()
        try await withHarness(clock: ClockAdapter(clock)) { harness in
            harness.server.setRoute("/file", Route(payload: Payload(seed: 42, length: 400_000)))
            var request = try harness.request("/file")
            request.maxBytesPerSecond = 10_000
            let record = try await harness.manager.add(request)
            #expect(await clock.waitForSleepers { $0.contains { $0 > clock.now.advanced(by: .milliseconds(50)) } })
            let before = try #require(clock.sleepers.last)
            // A hundred times slower: what is still owed now costs a hundred times as long.
            try await harness.manager.setMaxBytesPerSecond(100, for: record.id)
            #expect(await clock.waitForSleepers { ($0.last ?? before) > before })
            let after = try #require(clock.sleepers.last)
            #expect(after.offset > before.offset * 50, "\(before) -> \(after)")
            #expect(harness.server.requests(to: "/file").count == 1)
            #expect(try await harness.manager.download(record.id).status == .running)
        }
    }
}
