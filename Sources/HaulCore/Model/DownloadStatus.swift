/// Where a download stands, as stored and as shown to users. The state machine's finer states
/// (waiting to retry, verifying) all show as `running`.
public enum DownloadStatus: String, Hashable, Codable, Sendable, CaseIterable {
    case queued, running, paused, completed, failed, removed

    /// Statuses a restart picks up again by itself.
    public var resumesAfterRestart: Bool { self == .queued || self == .running }
    public var isTerminal: Bool { self == .completed || self == .failed || self == .removed }
}
