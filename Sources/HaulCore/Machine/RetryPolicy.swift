/// How long to wait before trying again: exponential backoff with full jitter, capped, and
/// the server's `Retry-After` when it gives one (it knows its own load better than we do).
public struct RetryPolicy: Hashable, Codable, Sendable {
    /// Tries per stretch without progress, the first one included. An attempt that made
    /// progress (kept bytes beyond any kept before, see `DownloadStateMachine+Retry`) resets the
    /// count: a link that drops every minute still finishes the file.
    public var maxAttempts: Int
    /// The ceiling of the first retry's backoff. The ceiling doubles with each failure up to
    /// `maxDelay`, and each wait is half the ceiling plus a random share of the other half. Also
    /// the base of the wait before one more connection after a refusal.
    public var baseDelay: Duration
    /// The most the backoff's ceiling reaches, however many failures; a `Retry-After` is bounded by
    /// `maxRetryAfter` instead.
    public var maxDelay: Duration
    /// The longest `Retry-After` waited for (`--retry-max-wait`). A server that asks for more
    /// fails the download at once, naming the time it asked for, unless `waitsForLongRetryAfter`.
    public var maxRetryAfter: Duration
    /// Wait as long as the server asks, however long: the download stays running, its record's
    /// error saying until when (the daemon, the library's default). `haul get` fails instead.
    public var waitsForLongRetryAfter: Bool
    /// The low-speed rule (curl's `--speed-limit`/`--speed-time`): a connection under
    /// `speedLimit` bytes/s for `speedTime` ends its attempt as a failure that its bytes do not
    /// excuse. 0 turns it off.
    public var speedLimit: Int64
    /// How long a connection may stay under `speedLimit` before its attempt fails.
    public var speedTime: Duration

    /// A policy with the engine's defaults for what is not given: 5 attempts; backoff from 0.5 s up
    /// to 30 s; `Retry-After` up to 60 s, and longer ones waited for; the low-speed rule at 1024
    /// bytes/s over 60 s.
    public init(
        maxAttempts: Int = 5,
        baseDelay: Duration = .milliseconds(500),
        maxDelay: Duration = .seconds(30),
        maxRetryAfter: Duration = .seconds(60),
        waitsForLongRetryAfter: Bool = true,
        speedLimit: Int64 = 1024,
        speedTime: Duration = .seconds(60)
    ) {
        self.waitsForLongRetryAfter = waitsForLongRetryAfter
        self.speedLimit = speedLimit
        self.speedTime = speedTime
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The delay before retry number `failures` (1 for the first retry). `jitter` is a random
    /// number in 0..<1 supplied by the caller, so the function stays pure and testable.
    public func delay(afterFailures failures: Int, retryAfter: Duration?, jitter: Double) -> Duration {
        if let retryAfter { return min(max(retryAfter, .zero), maxRetryAfter) }
        let exponent = min(max(failures - 1, 0), 30)
        let ceiling = min(baseDelay * (1 << exponent), maxDelay)
        // Half fixed, half random: never zero, and concurrent clients spread out.
        return ceiling / 2 + ceiling / 2 * min(max(jitter, 0), 1)
    }
}

/// `Retry-After` is either delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
public enum RetryAfter {
    /// `nowSecondsSince1970` is passed in: the core reads no clock.
    public static func parse(_ value: String, nowSecondsSince1970: Int64) -> Duration? {
        let text = value.trimmingSpaces()
        if let seconds = Int64(text) { return seconds >= 0 ? .seconds(seconds) : nil }
        guard let date = HTTPDate.parse(text) else { return nil }
        return .seconds(max(0, date - nowSecondsSince1970))
    }
}

/// IMF-fixdate, the one date format servers must send: `Sun, 06 Nov 1994 08:49:37 GMT`.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970, or nil when not an IMF-fixdate.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
            let day = Int64(parts[1]),
            let month = months.firstIndex(of: parts[2].lowercased()),
            let year = Int64(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int64(clock[0]), let minute = Int64(clock[1]),
            let second = Int64(clock[2])
        else { return nil }
        return daysFromCivil(year: year, month: Int64(month + 1), day: day) * 86_400
            + hour * 3600 + minute * 60 + second
    }

    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), what `If-Modified-Since` carries.
    public static func format(_ secondsSince1970: Int64) -> String {
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let rest = secondsSince1970 - days * 86_400
        let (year, month, day) = civilFromDays(days)
        // 1970-01-01 was a Thursday.
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            """
            \(weekday), \(two(day)) \(names[Int(month - 1)]) \(year) \
            \(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60)) GMT
            """
    }

    /// `2026-11-25T06:29:49Z`: a time in a message.
    public static func iso8601(_ secondsSince1970: Int64) -> String {
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let rest = secondsSince1970 - days * 86_400
        let (year, month, day) = civilFromDays(days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }

    /// Howard Hinnant's civil-from-days, the inverse of `daysFromCivil`.
    static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Howard Hinnant's days-from-civil: days since 1970-01-01 of a proleptic Gregorian date.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
