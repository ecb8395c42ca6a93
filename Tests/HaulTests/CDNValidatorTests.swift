import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// CDNs that break the textbook use of validators: one that answers `If-Range` with an ETag by
/// sending the whole file (it accepts only a date), one whose ETag changes with every request.
/// With one connection and with several, haul finishes byte-exact, never restarts from zero for
/// them, and reads no whole body it did not need (a 200 is closed unread and the range asked again).
@Suite(.timeLimit(.minutes(2))) struct CDNValidatorTests {
    let payload = Payload(seed: 2130, length: 4 << 20)
    let date = "Wed, 25 Nov 2026 10:00:00 GMT"

    func route(_ quirk: ValidatorQuirk, throttle: Int? = nil, script: [Fault] = []) -> Route {
        var route = Route(payload: payload, lastModified: date, throttle: throttle, script: script)
        route.validatorQuirk = quirk
        return route
    }

    /// Several connections: every extra connection's range carries `If-Range`.
    @Test(arguments: [ValidatorQuirk.ifRangeDatesOnly, .etagPerRequest])
    func severalConnections(quirk: ValidatorQuirk) async throws {
        try await withHarness { harness in
            harness.server.setRoute("/cdn", route(quirk, throttle: 8 << 20))
            let outcome = try await harness.download(harness.request("/cdn", connections: 4))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(!outcome.restarted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            // The quirk answers at most one 200 per connection before the trust is lowered.
            let whole = harness.server.responses(to: "/cdn").filter { $0.status == 200 }.count
            #expect(whole <= 4, "\(whole) whole answers")
            let dates = harness.server.requests(to: "/cdn").compactMap { $0.header("If-Range") }.filter { $0 == date }
            if quirk == .ifRangeDatesOnly { #expect(!dates.isEmpty, "fell back to the date") }
        }
    }

    /// One connection resuming: the drop makes it ask `bytes=N-` with `If-Range`; the quirky
    /// answer (a 200) is not read, and the range is asked again with the date and an overlap.
    @Test(arguments: [ValidatorQuirk.ifRangeDatesOnly, .etagPerRequest])
    func oneConnectionResuming(quirk: ValidatorQuirk) async throws {
        try await withHarness { harness in
            harness.server.setRoute("/cdn", route(quirk, script: [.dropAfter(1_500_000)]))
            let outcome = try await harness.download(harness.request("/cdn"))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(!outcome.restarted, "never from zero again: \(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            let requests = harness.server.requests(to: "/cdn")
            #expect(requests.last?.header("If-Range") == date, "\(requests.map { ($0.range, $0.header("If-Range")) })")
            // The resume re-read an overlap before its resume point to prove the bytes.
            let start = requests.last?.range.flatMap(ByteRange.init(parsing:))?.start ?? 0
            #expect(start > 0 && start < 1_500_000, "\(String(describing: requests.last?.range))")
        }
    }

    /// A file that really changed (another date and ETag) still starts over.
    @Test func aRealChangeStillStartsOver() async throws {
        let other = Payload(seed: 2131, length: payload.length)
        try await withHarness { harness in
            var first = Route(payload: payload, lastModified: date, script: [.switchEntity(other, etag: "\"new\"")])
            first.script = [.dropAfter(1_000_000), .switchEntity(other, etag: "\"new\"")]
            harness.server.setRoute("/cdn", first)
            let outcome = try await harness.download(harness.request("/cdn"))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(other.mismatch(inFileAt: try #require(outcome.path)) == nil)
        }
    }
}
