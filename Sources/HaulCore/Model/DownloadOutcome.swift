/// How a download left this process's schedule: it finished (completed, failed, removed), was
/// paused or stopped by a shutdown, was found complete when added, or could not run here.
/// Unlike progress events, outcomes are never dropped: each download that leaves the schedule
/// yields exactly one, so a caller can wait for ten thousand downloads without missing one.
public struct DownloadOutcome: Sendable, Hashable {
    /// The download that left the schedule.
    public var id: DownloadID
    /// The status it was left in. `running` or `queued` after a shutdown (the next start
    /// resumes it), or when it could not start here (`error` then says why).
    public var status: DownloadStatus
    /// The record as stored when it stopped; nil when it was not read (shutdown of a queued
    /// download, or a download that could not start).
    public var record: DownloadRecord?
    /// Why it did not run here: another process holds it, or the store failed.
    public var error: HaulError?
    /// Added again after it had completed, with its file intact: nothing was downloaded.
    public var alreadyComplete: Bool
    /// Requests and connections of the run that ended here; nil when it did not run.
    public var transfer: TransferStats?

    /// An outcome from its parts; `record`, `error` and `transfer` default to nil, and
    /// `alreadyComplete` to false.
    public init(
        id: DownloadID, status: DownloadStatus, record: DownloadRecord? = nil, error: HaulError? = nil,
        alreadyComplete: Bool = false, transfer: TransferStats? = nil
    ) {
        self.id = id
        self.status = status
        self.record = record
        self.error = error
        self.alreadyComplete = alreadyComplete
        self.transfer = transfer
    }

    /// The outcome of a download that stopped as `record` says: its id and status are the record's.
    public init(_ record: DownloadRecord, alreadyComplete: Bool = false, transfer: TransferStats? = nil) {
        self.init(
            id: record.id, status: record.status, record: record, alreadyComplete: alreadyComplete, transfer: transfer)
    }

    /// The error that ended it: its own failure, or the reason it could not run here.
    public var failure: HaulError? {
        error ?? (status == .failed ? record?.error ?? HaulError(.internal, "failed without an error") : nil)
    }

    /// The event that tells this outcome, as the event stream would have (`interrupted` for a
    /// download left to the next start).
    public var finalEvent: DownloadEvent {
        let path = record?.finalPath ?? ""
        let kind: DownloadEvent.Kind
        switch status {
        case .completed: kind = alreadyComplete ? .alreadyComplete(path: path) : .completed(path: path)
        case .failed: kind = .failed(failure ?? HaulError(.internal, "failed without an error"))
        case .paused: kind = .paused
        case .removed: kind = .removed
        case .queued, .running: kind = error.map { .failed($0) } ?? .interrupted
        }
        return DownloadEvent(id: id, kind: kind)
    }
}
