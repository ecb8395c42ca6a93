/// Where a download stands, as stored and as shown to users. The state machine's finer states
/// (waiting to retry, verifying) all show as `running`.
public enum DownloadStatus: String, Hashable, Codable, Sendable, CaseIterable {
    /// `queued`: waiting for a free slot. `running`: transferring, waiting to retry or verifying.
    /// `paused`: stopped by the user, its bytes kept. `completed`: the file is published under its final
    /// name. `failed`: given up (`DownloadRecord.error` says why). `removed`: taken off the list by the user.
    case queued, running, paused, completed, failed, removed

    /// Statuses a restart picks up again by itself.
    public var resumesAfterRestart: Bool { self == .queued || self == .running }
    /// Completed, failed or removed: the download will not run again on its own (a failed one runs again
    /// only when resumed or given a new URL).
    public var isTerminal: Bool { self == .completed || self == .failed || self == .removed }
}
