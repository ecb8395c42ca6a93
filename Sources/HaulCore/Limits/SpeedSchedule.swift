/// A global rate limit that changes with the time of the week (`haul serve --limit-schedule`).
///
/// Grammar: rules separated by `;`, each `DAYS FROM-TO RATE`:
/// - `DAYS`: `*` (every day), or a comma list of days and day ranges: `Mon`, `Sat,Sun`,
///   `Mon-Fri`, `Fri-Mon` (a range may wrap past Sunday). Days are English names, three letters
///   or whole, in any case.
/// - `FROM-TO`: `HH:MM-HH:MM` in the daemon's local time, `24:00` allowed as an end. A `TO` at or
///   before `FROM` runs past midnight into the next day (`Fri 22:00-06:00` ends Saturday 06:00).
/// - `RATE`: a rate as `--limit-rate` spells it (`500K`, `2M`), or `0`, `none` or `unlimited` for
///   no limit.
///
/// The first rule that covers a moment gives the limit; outside every rule the daemon's own
/// `--limit-rate` holds (no limit without it). `Mon-Fri 09:00-18:00 1M; * 00:00-24:00 0`.
///
/// Pure: a moment is given as a weekday and a time of day; the daemon turns its clock's time
/// into one (`SpeedScheduler`).
public struct SpeedSchedule: Sendable, Hashable, CustomStringConvertible {
    /// A day of the week, Monday first: raw values 0 to 6, as `Moment` counts days.
    public enum Weekday: Int, Sendable, Hashable, CaseIterable {
        /// The days in order, `monday` (0) to `sunday` (6).
        case monday, tuesday, wednesday, thursday, friday, saturday, sunday

        static let names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

        /// `mon`, `Monday`, `MON`: three letters or the whole name.
        init?(name: String) {
            let lower = name.lowercased()
            guard lower.count >= 3,
                let index = Self.names.firstIndex(where: { $0.hasPrefix(lower) && (lower.count == 3 || lower == $0) })
            else {
                return nil
            }
            self.init(rawValue: index)
        }
    }

    /// A moment in the week: seconds since Monday 00:00.
    public struct Moment: Sendable, Hashable, Comparable {
        /// Seconds in a week: 604,800.
        public static let week = 7 * 86_400
        /// Seconds since Monday 00:00; within one week when made by `init(secondOfWeek:)`.
        public var secondOfWeek: Int

        /// `hour:minute:second` on `weekday`, as given: a time of day (hours 0-23) is not checked
        /// or wrapped.
        public init(weekday: Weekday, hour: Int, minute: Int, second: Int = 0) {
            secondOfWeek = weekday.rawValue * 86_400 + hour * 3600 + minute * 60 + second
        }

        /// The moment `secondOfWeek` seconds after Monday 00:00, wrapped into one week (a negative
        /// count goes back from the week's end).
        public init(secondOfWeek: Int) {
            self.secondOfWeek = ((secondOfWeek % Self.week) + Self.week) % Self.week
        }

        /// Earlier in the week, Monday 00:00 first.
        public static func < (lhs: Moment, rhs: Moment) -> Bool { lhs.secondOfWeek < rhs.secondOfWeek }
    }

    /// One rule of the schedule: its days, its span of the day, and its rate.
    public struct Rule: Sendable, Hashable {
        /// The rule as written.
        public var text: String
        /// The days its span starts on, in the order written, each once.
        public var days: [Weekday]
        /// Minutes since midnight: `start` in 0..<1440, `end` in 1...1440; `end <= start` wraps.
        public var start: Int
        /// Minutes since midnight where the span ends, in 1...1440; at or before `start`, it ends
        /// the next day.
        public var end: Int
        /// Nil: no limit.
        public var rate: ByteRate?

        /// The seconds of the week it covers, as half-open spans; an end may pass the week's end.
        var spans: [(from: Int, to: Int)] {
            let length = (end > start ? end - start : end + 1440 - start) * 60
            return days.map { day in
                let from = day.rawValue * 86_400 + start * 60
                return (from, from + length)
            }
        }

        func covers(_ moment: Moment) -> Bool {
            spans.contains { span in
                (span.from..<span.to).contains(moment.secondOfWeek)
                    || (span.from..<span.to).contains(moment.secondOfWeek + Moment.week)
            }
        }
    }

    /// The rules in the order written: the first that covers a moment gives the limit.
    public let rules: [Rule]
    /// Seconds of the week where the rule in force changes, ascending. An edge between two spans
    /// of one rule (`Sat,Sun 00:00-24:00` at Sunday 00:00) is none: nothing changes there.
    public let boundaries: [Int]

    /// The schedule as given, rules trimmed and joined by `; `.
    public var description: String { rules.map(\.text).joined(separator: "; ") }

    /// Parses `text` by the grammar above; empty rules (`;;`, a trailing `;`) are skipped. Throws a
    /// `.usage` error naming the rule and what is wrong with it, or saying that there is no rule.
    public init(parsing text: String) throws(HaulError) {
        var rules: [Rule] = []
        for (index, part) in text.split(separator: ";", omittingEmptySubsequences: false).enumerated() {
            let words = part.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if words.isEmpty { continue }
            let written = words.joined(separator: " ")
            func problem(_ what: String) -> HaulError {
                HaulError(.usage, "--limit-schedule: rule \(index + 1) '\(written)': \(what)")
            }
            guard words.count == 3 else {
                throw problem("expected DAYS HH:MM-HH:MM RATE, such as 'Mon-Fri 09:00-18:00 1M'")
            }
            guard let days = Self.days(words[0]) else {
                throw problem("'\(words[0])' is not a day list; use *, Mon, Sat,Sun or Mon-Fri")
            }
            guard let span = Self.times(words[1]) else {
                throw problem("'\(words[1])' is not a time span; use HH:MM-HH:MM such as 09:00-18:00 (24:00 as an end)")
            }
            guard span.start != span.end else { throw problem("'\(words[1])' is empty; 00:00-24:00 is the whole day") }
            let rate: ByteRate?
            if ["0", "none", "unlimited"].contains(words[2].lowercased()) {
                rate = nil
            } else {
                do throws(HaulError) {
                    rate = try ByteRate(parsing: words[2])
                } catch {
                    throw problem(error.message)
                }
            }
            rules.append(Rule(text: written, days: days, start: span.start, end: span.end, rate: rate))
        }
        guard !rules.isEmpty else {
            throw HaulError(
                .usage, "--limit-schedule: no rules; expected DAYS HH:MM-HH:MM RATE, such as 'Mon-Fri 09:00-18:00 1M'")
        }
        self.rules = rules
        let edges = Set(rules.flatMap { $0.spans.flatMap { [$0.from % Moment.week, $0.to % Moment.week] } })
        func governing(_ second: Int) -> Int? { rules.firstIndex { $0.covers(Moment(secondOfWeek: second)) } }
        boundaries = edges.filter { governing($0) != governing($0 - 1) }.sorted()
    }

    /// The rule that sets the limit at `moment`, nil outside every rule.
    public func rule(at moment: Moment) -> Rule? {
        rules.first { $0.covers(moment) }
    }

    /// The limit at `moment`: the first covering rule's, else `fallback`.
    public func rate(at moment: Moment, otherwise fallback: ByteRate?) -> ByteRate? {
        rule(at: moment).map(\.rate) ?? fallback
    }

    /// Seconds from `moment` to the next boundary (more than zero); a week when there is none.
    public func secondsToNextBoundary(from moment: Moment) -> Int {
        boundaries.map { (($0 - moment.secondOfWeek) % Moment.week + Moment.week) % Moment.week }
            .filter { $0 > 0 }.min() ?? Moment.week
    }

    /// Whether going forward from `from` to `to` (less than a week) passes a boundary, `to`
    /// included. A `to` before `from` (a wall clock set back) goes round the week, so it
    /// passes one if there is any.
    public func passesBoundary(from: Moment, to: Moment) -> Bool {
        let elapsed = ((to.secondOfWeek - from.secondOfWeek) % Moment.week + Moment.week) % Moment.week
        return elapsed > 0 && secondsToNextBoundary(from: from) <= elapsed
    }

    // MARK: Parsing

    private static func days(_ text: String) -> [Weekday]? {
        if text == "*" { return Weekday.allCases }
        var days: [Weekday] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false).map { Weekday(name: String($0)) }
            guard (1...2).contains(ends.count), let first = ends.first ?? nil, let last = ends.last ?? nil else {
                return nil
            }
            var day = first.rawValue
            while true {
                let weekday = Weekday(rawValue: day)!
                if !days.contains(weekday) { days.append(weekday) }
                if day == last.rawValue { break }
                day = (day + 1) % 7
            }
        }
        return days
    }

    /// `HH:MM-HH:MM` as minutes since midnight; `24:00` only as the end.
    private static func times(_ text: String) -> (start: Int, end: Int)? {
        let ends = text.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count == 2, let start = minutes(ends[0]), let end = minutes(ends[1]), start < 1440 else {
            return nil
        }
        return (start, end)
    }

    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0 >= "0" && $0 <= "9" } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60
        else { return nil }
        let total = hour * 60 + minute
        return total <= 1440 ? total : nil
    }
}
