/// Where a change goes depends on where the queue lives: this process's list (`.local`), or the
/// fleet's database, where one statement reaches every host's downloads (`.fleet`). The machine
/// answers which; the manager carries it out, and never asks which backend it has.
extension DownloadQueue {
    /// What a pause of these downloads does: here, the machine's actions (`pause`); in a fleet,
    /// one statement of the shared store for all of them, wherever they run, whose results are
    /// then the machine's to apply (`fleetPaused`).
    public enum PauseStep: Sendable, Hashable {
        /// This process's queue: carry out these actions.
        case here([Action])
        /// Fleet: pause these downloads in one statement of the shared store
        /// (`SharedQueueStore.pause`), then hand its results to `fleetPaused`.
        case everywhere([DownloadID])
    }

    /// What a resume of these downloads does: here, each one not scheduled here is picked up as
    /// an add would pick it up (`readd`: a queued or running one whose start found it locked by
    /// another process is tried again); in a fleet, those not queued or running already are
    /// queued again in one transaction (all or none: one running on another host refuses it).
    public enum ResumeStep: Sendable, Hashable {
        /// This process's queue: pick these up as an add would (`readd`); those scheduled here
        /// already are left out.
        case readd([DownloadRecord])
        /// Fleet: queue these again in one transaction, all or none; those queued or running
        /// already are left out.
        case requeue([DownloadRecord])
    }

    /// Whether a download is removed by this process, or through the host that holds it: in a
    /// fleet, one not running here is removed at once when no host holds it, else by a command
    /// its host applies at its next renewal.
    public enum RemoveStep: Sendable, Hashable {
        /// This process removes it: it runs here, or the queue is this process's own.
        case here
        /// Fleet, and it does not run here: the shared store removes it at once when no host holds
        /// it, else leaves a command for the host that does (`SharedQueueStore.request`).
        case throughItsHost
    }

    /// What a pause of everything does: here, the machine's actions (`pauseAll`); in a fleet,
    /// every download queued or running on any host, listed from the store and paused in one
    /// statement.
    public enum PauseAllStep: Sendable, Hashable {
        /// This process's queue: carry out these actions.
        case here([Action])
        /// Fleet: list every download queued or running on any host from the store, and pause them
        /// all in one statement.
        case everywhere
    }

    /// At start: this process's queue is what its store says was queued or running when the last
    /// process stopped; a fleet host starts claiming from the database.
    public func restore() -> [Action] {
        isFleet ? [.startClaiming] : [.restoreQueued]
    }

    /// Pauses these downloads (each with the status its record has), all or none
    /// (`pauseRefusal`).
    public mutating func pausing(_ records: [(id: DownloadID, status: DownloadStatus)]) -> Result<PauseStep, HaulError>
    {
        if isFleet {
            if let refusal = pauseRefusal(records) { return .failure(refusal) }
            return .success(.everywhere(records.map(\.id)))
        }
        return pause(records).map(PauseStep.here)
    }

    /// Pauses everything: this process's queue answers with its actions (`pauseAll`); a fleet host
    /// leaves it to the shared store.
    public mutating func pausingAll() -> PauseAllStep {
        isFleet ? .everywhere : .here(pauseAll())
    }

    /// Resumes these downloads, all or none: a completed one refuses them all.
    public func resuming(_ records: [DownloadRecord]) -> Result<ResumeStep, HaulError> {
        if let done = records.first(where: { $0.status == .completed }) {
            return .failure(HaulError(.conflict, "download \(done.id) is already complete; nothing was changed"))
        }
        if isFleet { return .success(.requeue(records.filter { !$0.status.resumesAfterRestart })) }
        return .success(.readd(records.filter { !isScheduled($0.id) }))
    }

    /// A remove of `id`, which exists.
    public func removing(_ id: DownloadID) -> RemoveStep {
        isFleet && !isRunning(id) ? .throughItsHost : .here
    }

    /// Whether the waiting list is this process's, in memory (a fleet's is the database's: no
    /// host holds it).
    public var holdsWaitingList: Bool { !isFleet }

    /// Whether progress noted between checkpoints without fsync may be trusted after a kill on
    /// the same boot: not by a fleet host, since another host may take the `.part` over.
    public var trustsProgressNotes: Bool { !isFleet }
}
