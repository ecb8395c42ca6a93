import Haul
import HaulCore
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Applies a `SpeedSchedule` to the daemon's global limit (`haul serve --limit-schedule`): once
/// at start, then at each boundary of the schedule, and at no other time, so a limit changed
/// through the API or aria2's `changeGlobalOption` holds until the next boundary.
///
/// Sleeps on the injected `HaulClock` (a test's manual clock) and reads calendar time from
/// `now` (the wall clock, or one a test derives from its manual clock), turned into a moment of
/// the week by `moment` (the host's local time in the daemon, `localMoment`). A sleep lasts a minute at most, so a change of the wall
/// clock (a daylight-saving switch, a suspended laptop) is noticed within a minute; whether a
/// boundary was passed is judged in local time of the week, from one look to the next.
struct SpeedScheduler: Sendable {
    /// The schedule and the limit outside its rules (`--limit-rate`), both changed by a reload
    /// of the configuration file; without a schedule the scheduler changes nothing.
    let plan: GlobalLimitPlan
    var clock: any HaulClock
    var now: @Sendable () -> Date
    var moment: @Sendable (Date) -> SpeedSchedule.Moment
    var logger: Logger
    var apply: @Sendable (ByteRate?) -> Void

    init(
        schedule: SpeedSchedule?, fallback: ByteRate?, clock: any HaulClock, now: @escaping @Sendable () -> Date,
        moment: @escaping @Sendable (Date) -> SpeedSchedule.Moment, logger: Logger,
        apply: @escaping @Sendable (ByteRate?) -> Void
    ) {
        self.plan = GlobalLimitPlan(schedule: schedule, fallback: fallback)
        self.clock = clock
        self.now = now
        self.moment = moment
        self.logger = logger
        self.apply = apply
    }

    static let longestSleep = 60.0

    /// The moment of the week `date` falls on in the host's local time, as the C library tells it
    /// (`localtime_r`: the zone `TZ` names, else `/etc/localtime`, from the system's tzdata).
    /// Not Foundation's `TimeZone`: its named zones need the internationalization data haul does
    /// not link, and without it `TimeZone.current` is GMT.
    @Sendable static func localMoment(of date: Date) -> SpeedSchedule.Moment {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        if localtime_r(&seconds, &parts) == nil {
            // Only for a time past the C library's range: the schedule then reads UTC.
            gmtime_r(&seconds, &parts)
        }
        return moment(parts)
    }

    /// `tm_wday` 0 is Sunday; the schedule's week starts on Monday.
    private static func moment(_ parts: tm) -> SpeedSchedule.Moment {
        SpeedSchedule.Moment(
            weekday: SpeedSchedule.Weekday(rawValue: Int((parts.tm_wday + 6) % 7)) ?? .monday,
            hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(min(parts.tm_sec, 59)))
    }

    /// Whether `schedule`'s limit is due: at start, when the local time of the week has passed a
    /// boundary since the last look (local time, so a daylight-saving jump is followed), or when
    /// the wall clock moved back or a week or more since then.
    func isDue(
        _ schedule: SpeedSchedule, last: (date: Date, moment: SpeedSchedule.Moment)?, date: Date,
        moment: SpeedSchedule.Moment
    ) -> Bool {
        guard let last else { return true }
        let elapsed = date.timeIntervalSince(last.date)
        return elapsed < 0 || elapsed >= Double(SpeedSchedule.Moment.week)
            || schedule.passesBoundary(from: last.moment, to: moment)
    }

    /// Applies the plan's limit for this moment at once: the schedule's rule, else the limit
    /// outside its rules. A reload that changed the plan calls it.
    func applyNow() {
        let plan = self.plan.current
        guard let schedule = plan.schedule else {
            // The reload's own line says the limit.
            apply(plan.fallback)
            return
        }
        applyRule(of: schedule, otherwise: plan.fallback, at: moment(now()))
    }

    /// Applies `schedule`'s limit at `moment` (`fallback` outside its rules), and logs it.
    private func applyRule(of schedule: SpeedSchedule, otherwise fallback: ByteRate?, at moment: SpeedSchedule.Moment) {
        let rate = schedule.rate(at: moment, otherwise: fallback)
        apply(rate)
        logger.info(
            "scheduled speed limit",
            metadata: [
                "maxBytesPerSecond": "\(rate.map { String($0.bytesPerSecond) } ?? "none")",
                "rule": "\(schedule.rule(at: moment)?.text ?? "none (--limit-rate)")",
            ])
    }

    /// Until cancelled. Without a schedule it only looks again each minute, for one a reload gives.
    func run() async {
        // The zone is read now (`localtime_r` need not read it itself).
        tzset()
        var last: (date: Date, moment: SpeedSchedule.Moment)?
        while !Task.isCancelled {
            let plan = self.plan.current
            let date = now()
            let moment = self.moment(date)
            if let schedule = plan.schedule, isDue(schedule, last: last, date: date, moment: moment) {
                applyRule(of: schedule, otherwise: plan.fallback, at: moment)
            }
            last = (date, moment)
            let fraction = date.timeIntervalSince1970 - date.timeIntervalSince1970.rounded(.down)
            let untilBoundary =
                plan.schedule.map { Double($0.secondsToNextBoundary(from: moment)) - fraction } ?? Self.longestSleep
            let wait = min(max(untilBoundary, 0.001), Self.longestSleep)
            do {
                try await clock.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
            } catch {
                return // cancelled: the daemon is stopping
            }
        }
    }
}
