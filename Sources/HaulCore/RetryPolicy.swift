/// How long to wait before trying again: exponential backoff with full jitter, capped, and
/// the server's `Retry-After` when it gives one (it knows its own load better than we do).
public struct RetryPolicy: Hashable, Codable, Sendable {
    /// Tries per stretch without progress, the first one included. An attempt that received
    /// bytes resets the count: a link that drops every minute still finishes the file.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// The longest `Retry-After` honoured; longer ones are cut to this.
    public var maxRetryAfter: Duration

    public init(
        maxAttempts: Int = 5,
        baseDelay: Duration = .milliseconds(500),
        maxDelay: Duration = .seconds(30),
        maxRetryAfter: Duration = .seconds(300)
    ) {
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
              let year = Int64(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int64(clock[0]), let minute = Int64(clock[1]),
              let second = Int64(clock[2]) else { return nil }
        return daysFromCivil(year: year, month: Int64(month + 1), day: day) * 86_400
            + hour * 3600 + minute * 60 + second
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
