/// What a download reports as it goes: the CLI draws progress from these, the daemon streams them.
public struct DownloadEvent: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Waiting for a free slot.
        case queued
        /// Transfer started or resumed from `offset`.
        case started(offset: Int64)
        case progress(Progress)
        /// An attempt failed; the next one starts after `delay`.
        case retrying(attempt: Int, delay: Duration, error: HaulError)
        /// The bytes on disk could not be used (the file changed, or the server ignored Range).
        case restarted(reason: String, cause: RestartCause)
        case paused
        /// Stopped by shutdown with its checkpoint saved; it resumes on the next start.
        case interrupted
        case completed(path: String)
        /// Nothing to do: the file was already complete.
        case alreadyComplete(path: String)
        case failed(HaulError)
        case removed
    }

    public var id: DownloadID
    public var kind: Kind

    public init(id: DownloadID, kind: Kind) {
        self.id = id
        self.kind = kind
    }

    /// True for the events after which the download does nothing more in this run.
    public var isFinal: Bool {
        switch kind {
        case .completed, .alreadyComplete, .failed, .removed, .paused, .interrupted: true
        default: false
        }
    }
}
