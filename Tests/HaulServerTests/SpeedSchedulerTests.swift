import Foundation
import Haul
import HaulCore
import HaulTesting
import Logging
import Testing

@testable import HaulServer

/// The daemon's schedule applied to a real `RateLimiter` (the manager's global one is the same
/// type), with calendar time derived from a manual clock: nothing waits for a real boundary.
@Suite(.timeLimit(.minutes(1))) struct SpeedSchedulerTests {
    /// Monday 2026-11-23 08:59:00 UTC.
    static let start = Date(timeIntervalSince1970: 1_795_424_340)

    /// The moment of the week in `zone`, from Foundation's calendar (whole Foundation, with its
    /// zones, is linked into the tests; the daemon reads the C library's, `localMoment`).
    static func moment(in zone: TimeZone) -> @Sendable (Date) -> SpeedSchedule.Moment {
        { date in
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let parts = calendar.dateComponents([.weekday, .hour, .minute, .second], from: date)
            // Calendar's weekday: 1 is Sunday; the schedule's week starts on Monday.
            return SpeedSchedule.Moment(
                weekday: SpeedSchedule.Weekday(rawValue: ((parts.weekday ?? 2) + 5) % 7) ?? .monday,
                hour: parts.hour ?? 0, minute: parts.minute ?? 0, second: parts.second ?? 0)
        }
    }

    /// The daemon's local time is the C library's, which agrees with Foundation's in the zone this
    /// process runs in, a week of quarter hours from now and across both daylight-saving changes
    /// of 2027 (where the zone has them). The daemon's own, without Foundation's zones, is
    /// checked across a change by the package check (`Packaging/check-package.sh`).
    @Test func localTimeIsTheCLibrarysAndFoundationsAlike() {
        let foundation = Self.moment(in: .current)
        var dates = (0..<(7 * 96)).map { Date(timeIntervalSince1970: 1_795_424_340 + Double($0) * 900) }
        dates += (0..<96).map { Date(timeIntervalSince1970: 1_806_195_540 - 86_400 + Double($0) * 1_800) }
        dates += (0..<96).map { Date(timeIntervalSince1970: 1_824_940_800 - 86_400 + Double($0) * 1_800) }
        for date in dates {
            #expect(SpeedScheduler.localMoment(of: date) == foundation(date), "\(date)")
        }
    }

    @Test func theLimitChangesAtEachBoundaryAndAChangeByHandHoldsUntilTheNext() async throws {
        let utc = try #require(TimeZone(identifier: "UTC"))
        #expect(
            Self.moment(in: utc)(Self.start)
                == SpeedSchedule.Moment(weekday: .monday, hour: 8, minute: 59))
        let clock = ManualClock()
        let adapter = ClockAdapter(clock)
        let limiter = RateLimiter(rate: nil, clock: adapter)
        let fallback = ByteRate(bytesPerSecond: 7000)
        let scheduler = SpeedScheduler(
            schedule: try SpeedSchedule(parsing: "Mon-Fri 09:00-18:00 1M; Sat,Sun 00:00-24:00 0"), fallback: fallback,
            clock: adapter, now: { Self.start.addingTimeInterval(adapter.seconds()) }, moment: Self.moment(in: utc),
            logger: Logger(label: "test"), apply: { limiter.setRate($0) })
        let running = Task { await scheduler.run() }
        defer { running.cancel() }

        /// Moves the clock on and returns once the scheduler sleeps again (it has applied what it would).
        func advance(_ duration: Duration) async {
            clock.advance(by: duration)
            await clock.waitForSleepers(count: 1)
        }

        await clock.waitForSleepers(count: 1)
        #expect(limiter.rate == fallback, "08:59 Monday: outside every rule, --limit-rate")
        #expect(clock.sleepers == [clock.now.advanced(by: .seconds(60))], "asleep until 09:00")
        await advance(.seconds(60))
        #expect(limiter.rate == ByteRate(bytesPerSecond: 1 << 20), "09:00 Monday")
        #expect(clock.sleepers == [clock.now.advanced(by: .seconds(60))], "at most a minute at a time")

        limiter.setRate(ByteRate(bytesPerSecond: 5 << 20)) // changed by hand (the API, aria2's changeGlobalOption)
        await advance(.seconds(60))
        await advance(.seconds(8 * 3600))
        #expect(
            limiter.rate == ByteRate(bytesPerSecond: 5 << 20), "17:01: the hand-set limit holds until the next boundary"
        )
        await advance(.seconds(58 * 60))
        #expect(limiter.rate == ByteRate(bytesPerSecond: 5 << 20), "17:59")
        await advance(.seconds(60))
        #expect(limiter.rate == fallback, "18:00 Monday: --limit-rate again")

        await advance(.seconds((24 * 4 + 6) * 3600)) // Saturday 00:00, past Friday's two boundaries at once
        #expect(limiter.rate == nil, "the weekend rule: no limit")
        await advance(.seconds(48 * 3600)) // Monday 00:00
        #expect(limiter.rate == fallback)
    }

    /// Local time decides, from one look to the next: in Berlin the clocks go from 02:00 to
    /// 03:00 on 2027-03-28, so a rule starting at 03:00 starts one minute after 01:59.
    @Test func aDaylightSavingJumpPassesTheBoundaryItSkipsTo() async throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let start = Date(timeIntervalSince1970: 1_806_195_540) // Sunday 01:59 CET
        #expect(
            Self.moment(in: berlin)(start) == SpeedSchedule.Moment(weekday: .sunday, hour: 1, minute: 59))
        let clock = ManualClock()
        let adapter = ClockAdapter(clock)
        let limiter = RateLimiter(rate: nil, clock: adapter)
        let scheduler = SpeedScheduler(
            schedule: try SpeedSchedule(parsing: "Sun 03:00-04:00 1M"), fallback: nil, clock: adapter,
            now: { start.addingTimeInterval(adapter.seconds()) }, moment: Self.moment(in: berlin),
            logger: Logger(label: "test"),
            apply: { limiter.setRate($0) })
        let running = Task { await scheduler.run() }
        defer { running.cancel() }
        await clock.waitForSleepers(count: 1)
        #expect(limiter.rate == nil)
        clock.advance(by: .seconds(60))
        await clock.waitForSleepers(count: 1)
        #expect(
            Self.moment(in: berlin)(start.addingTimeInterval(60))
                == SpeedSchedule.Moment(weekday: .sunday, hour: 3, minute: 0))
        #expect(limiter.rate == ByteRate(bytesPerSecond: 1 << 20), "03:00 CEST, a minute after 01:59 CET")
    }
}
