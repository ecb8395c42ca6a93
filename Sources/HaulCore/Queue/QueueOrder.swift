/// Where to move a queued download.
public enum QueueMove: String, Sendable, Codable, CaseIterable {
    /// `up` and `down`: one place toward the head or the tail of the waiting list; `top` and
    /// `bottom`: to its head or its tail.
    case up, down, top, bottom
}

/// The one definition of queue order: higher priority first, then lower position, then the id,
/// so no two downloads tie (a tie broken one way in memory and another in a store let a freed
/// slot go to a download the store listed behind the head). The stores' `ORDER BY` say the same
/// (`QueueOrder.sqlite`, `QueueOrder.postgres`).
public enum QueueOrder {
    /// Whether `a` comes before `b` in the queue: higher priority first, then lower position, then
    /// the lower id.
    public static func runsBefore(
        _ a: (priority: Int, position: Int64, id: DownloadID),
        _ b: (priority: Int, position: Int64, id: DownloadID)
    ) -> Bool {
        if a.priority != b.priority { return a.priority > b.priority }
        if a.position != b.position { return a.position < b.position }
        return a.id.rawValue < b.id.rawValue
    }

    /// The same order in SQL (SQLite and PostgreSQL compare text ids bytewise as Swift does for
    /// ASCII ids: SQLite's default BINARY collation; PostgreSQL's `COLLATE "C"`).
    public static let sqlite = "ORDER BY priority DESC, position ASC, id ASC"
    /// The same order for PostgreSQL, its ids compared under `COLLATE "C"`.
    public static let postgres = "ORDER BY priority DESC, position ASC, id COLLATE \"C\" ASC"
}

/// The whole queue at a glance: the daemon's summary.
public struct QueueSummary: Sendable, Hashable {
    /// Records per status, removed ones included.
    public var counts: [DownloadStatus: Int]
    /// Bytes per second of all running downloads together.
    public var downloadSpeed: Double
    /// Downloads run at once (`-j`): the queue's limit.
    public var maxConcurrentDownloads: Int

    /// A summary of `counts` per status, `downloadSpeed` in bytes per second, and the queue's
    /// limit.
    public init(counts: [DownloadStatus: Int], downloadSpeed: Double, maxConcurrentDownloads: Int) {
        self.counts = counts
        self.downloadSpeed = downloadSpeed
        self.maxConcurrentDownloads = maxConcurrentDownloads
    }
}
