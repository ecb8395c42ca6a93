/// The bounds of the settings that the engine, the daemon's API, aria2's options and the command
/// line all take, and the one wording of a value outside them: "FIELD must be between A and B,
/// not N". Each caller names the field as its user knows it (`-x`, `connections`,
/// `max-concurrent-downloads`) and throws its own kind of error.
public enum Limits {
    /// Connections of one download: `-x`, the API's `connections`, aria2's `split` and
    /// `max-connection-per-server`.
    public static let connections = 1...DownloadRequest.maxConnections
    /// Downloads running at once: `-j`, the API's `maxConcurrentDownloads`, aria2's
    /// `max-concurrent-downloads` (and the web page's field, which says the same in HTML).
    public static let concurrentDownloads = 1...1000
    /// Connections to one host, for all downloads together: `--max-connections-per-host`.
    public static let connectionsPerHost = 1...1024

    /// What is wrong with `value` as `field`, or nil when it is within `bounds`.
    public static func problem(_ value: Int, in bounds: ClosedRange<Int>, field: String) -> String? {
        bounds.contains(value)
            ? nil : "\(field) must be between \(bounds.lowerBound) and \(bounds.upperBound), not \(value)"
    }

    /// Throws `code` with `problem`'s words when `value` is given and outside `bounds`.
    public static func check(_ value: Int?, in bounds: ClosedRange<Int>, field: String, code: HaulError.Code)
        throws(HaulError)
    {
        guard let value, let problem = problem(value, in: bounds, field: field) else { return }
        throw HaulError(code, problem)
    }

    // MARK: The daemon's API: `bad-request`, naming the field

    /// Throws `.badRequest` naming `field` when `count` is given and outside `concurrentDownloads`.
    public static func check(maxConcurrentDownloads count: Int?, field: String = "maxConcurrentDownloads")
        throws(HaulError)
    {
        try check(count, in: concurrentDownloads, field: field, code: .badRequest)
    }

    /// Throws `.badRequest` naming `field` when `count` is given and outside `connections`.
    public static func check(connections count: Int?, field: String = "connections") throws(HaulError) {
        try check(count, in: Self.connections, field: field, code: .badRequest)
    }

    /// Throws `.badRequest` when `maxBytesPerSecond` is given and not positive; nil (no limit)
    /// passes.
    public static func check(maxBytesPerSecond: Int64?) throws(HaulError) {
        guard let maxBytesPerSecond else { return }
        guard maxBytesPerSecond > 0 else {
            throw HaulError(
                .badRequest,
                """
                maxBytesPerSecond must be a positive number of bytes per second, or null for no limit, not \
                \(maxBytesPerSecond)
                """
            )
        }
    }
}
