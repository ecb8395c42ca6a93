/// Where to move a queued download.
public enum QueueMove: String, Sendable, Codable, CaseIterable {
    case up, down, top, bottom
}

/// The whole queue at a glance: the daemon's summary.
public struct QueueSummary: Sendable, Hashable {
    /// Records per status, removed ones included.
    public var counts: [DownloadStatus: Int]
    /// Bytes per second of all running downloads together.
    public var downloadSpeed: Double
    public var maxConcurrentDownloads: Int

    public init(counts: [DownloadStatus: Int], downloadSpeed: Double, maxConcurrentDownloads: Int) {
        self.counts = counts
        self.downloadSpeed = downloadSpeed
        self.maxConcurrentDownloads = maxConcurrentDownloads
    }
}
