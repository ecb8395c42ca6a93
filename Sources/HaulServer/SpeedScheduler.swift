import Foundation
import Haul
import HaulCore
import Logging

/// Applies a `SpeedSchedule` to the daemon's global limit (`haul serve --limit-schedule`): once
/// at start, then at each boundary of the schedule, and at no other time, so a limit changed
/// through the API or aria2's `changeGlobalOption` holds until the next boundary.
///
/// Sleeps on the injected `HaulClock` (a test's manual clock) and reads calendar time from
/// `now` (the wall clock, or one a test derives from its manual clock), in `timeZone` (the
/// host's local time in the daemon). A sleep lasts a minute at most, so a change of the wall
/// clock (a daylight-saving switch, a suspended laptop) is noticed within a minute.
struct SpeedScheduler: Sendable {
    var schedule: SpeedSchedule
    /// The limit outside every rule (`--limit-rate`).
    var fallback: ByteRate?
    var clock: any HaulClock
    var now: @Sendable () -> Date
    var timeZone: TimeZone
    var logger: Logger
    var apply: @Sendable (ByteRate?) -> Void

    static let longestSleep = 60.0

    /// The moment of the week `date` falls on in `timeZone`.
    static func moment(of date: Date, in timeZone: TimeZone) -> SpeedSchedule.Moment {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.weekday, .hour, .minute, .second], from: date)
        // Calendar's weekday: 1 is Sunday; the schedule's week starts on Monday.
        let weekday = SpeedSchedule.Weekday(rawValue: ((parts.weekday ?? 2) + 5) % 7) ?? .monday
        return SpeedSchedule.Moment(weekday: weekday, hour: parts.hour ?? 0, minute: parts.minute ?? 0, second: parts.second ?? 0)
    }

    /// Until cancelled.
    func run() async {
        var due = Date.distantPast
        var applied = Date.distantPast
        while !Task.isCancelled {
            let date = now()
            // A wall clock set back past the last change counts as a boundary too.
            if date >= due || date < applied {
                let moment = Self.moment(of: date, in: timeZone)
                let rate = schedule.rate(at: moment, otherwise: fallback)
                apply(rate)
                let fraction = date.timeIntervalSince1970 - date.timeIntervalSince1970.rounded(.down)
                due = date.addingTimeInterval(Double(schedule.secondsToNextBoundary(from: moment)) - fraction)
                applied = date
                logger.info("scheduled speed limit", metadata: [
                    "maxBytesPerSecond": "\(rate.map { String($0.bytesPerSecond) } ?? "none")",
                    "rule": "\(schedule.rule(at: moment)?.text ?? "none (--limit-rate)")",
                    "until": "\(due)",
                ])
            }
            let wait = min(max(due.timeIntervalSince(date), 0.001), Self.longestSleep)
            do {
                try await clock.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
            } catch {
                return  // cancelled: the daemon is stopping
            }
        }
    }
}
