/// What a download reports as it goes: the CLI draws progress from these, the daemon streams them.
public struct DownloadEvent: Sendable, Hashable {
    /// What happened to the download.
    public enum Kind: Sendable, Hashable {
        /// Waiting for a free slot.
        case queued
        /// Transfer started or resumed from `offset`.
        case started(offset: Int64)
        /// Bytes on disk, speed and connections, sent at each tick while bytes flow, and once more
        /// when the download completes.
        case progress(Progress)
        /// An attempt failed; the next one starts after `delay`.
        case retrying(attempt: Int, delay: Duration, error: HaulError)
        /// The bytes on disk could not be used (the file changed, or the server ignored Range).
        case restarted(reason: String, cause: RestartCause)
        /// Stopped by a pause: the bytes are kept, and a resume continues from them.
        case paused
        /// Stopped by shutdown with its checkpoint saved; it resumes on the next start.
        case interrupted
        /// Finished: the complete file is at `path`, under its final name.
        case completed(path: String)
        /// Nothing to do: the file was already complete.
        case alreadyComplete(path: String)
        /// Gave up, or could not run here, for this reason.
        case failed(HaulError)
        /// Removed by the user: stopped, its `.part` deleted, its record kept with status `removed`.
        case removed
        /// What completes the name of content it leads (`DownloadGroup`: a Hub cache's snapshot
        /// and ref, an image layout's `index.json`) could not be written: the group is kept
        /// failed, tried again at the next completion of a member and at the next start.
        case finishFailed(group: GroupID, name: String, HaulError)
    }

    /// The download this event is about.
    public var id: DownloadID
    /// What happened to it.
    public var kind: Kind

    /// An event of `kind` about the download `id`.
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
