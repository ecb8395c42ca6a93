/// A caller's pause, resume, pause of everything and remove, as actions. Where a change goes
/// depends on where the queue lives: this process's list (`.local`), or the fleet's database,
/// where one statement reaches every host's downloads (`.fleet`). The machine answers with the
/// actions for its backend; the manager carries them out and never asks which backend it has.
/// A refusal is an action too (`.refuse`): the caller's answer, before anything changed.
extension DownloadQueue {
    /// At start: this process's queue is what its store says was queued or running when the last
    /// process stopped; a fleet host starts claiming from the database.
    public func restore() -> [Action] {
        isFleet ? [.startClaiming] : [.restoreQueued]
    }

    /// Pauses these downloads (each with the status its record has), all or none
    /// (`pauseRefusal`): here, a running one is asked to stop as paused, a waiting one leaves the
    /// list and is saved paused, one already paused stays so; in a fleet, one statement pauses
    /// them all, wherever they run (`.pauseEverywhere`, whose results come back as
    /// `fleetPaused`).
    public mutating func pausing(_ records: [(id: DownloadID, status: DownloadStatus)]) -> [Action] {
        if let refusal = pauseRefusal(records) { return [.refuse(refusal)] }
        if isFleet { return [.pauseEverywhere(records.map(\.id))] }
        var actions: [Action] = []
        var paused: [DownloadID] = []
        for (id, status) in records {
            if isRunning(id) {
                actions += stop(id, as: .paused)
            } else if status != .paused {
                actions += schedule(.left([id]))
                paused.append(id)
            }
        }
        if !paused.isEmpty { actions.append(.savePaused(paused)) }
        return actions
    }

    /// Pauses everything: here, every run stops as paused and the waiting list is emptied into
    /// one save; in a fleet, every download queued or running on any host
    /// (`.pauseAllEverywhere`).
    public mutating func pausingAll() -> [Action] {
        guard let waiting = withLocal({ $0.takeWaiting() }) else { return [.pauseAllEverywhere] }
        var actions: [Action] = []
        for id in runningIDs { actions += stop(id, as: .paused) }
        actions.append(.savePaused(waiting.map(\.id)))
        return actions
    }

    /// Resumes these downloads, all or none: a completed one refuses them all. Here, each one not
    /// scheduled here is picked up as an add would pick it up (`.readd`: a queued or running one
    /// whose start found it locked by another process is tried again); in a fleet, those not
    /// queued or running already are queued again in one transaction (`.requeue`: all or none,
    /// one running on another host refuses it).
    public func resuming(_ records: [DownloadRecord]) -> [Action] {
        if let done = records.first(where: { $0.status == .completed }) {
            return [.refuse(HaulError(.conflict, "download \(done.id) is already complete; nothing was changed"))]
        }
        if isFleet { return [.requeue(records.filter { !$0.status.resumesAfterRestart })] }
        return records.filter { !isScheduled($0.id) }.map { .readd($0) }
    }

    /// A remove of `id`, which exists: one running here is asked to stop as removed, then
    /// removed here (`.removeHere`, once it has stopped); in a fleet, one that does not run here
    /// is removed by the shared store at once when no host holds it, else by a command its host
    /// applies at its next renewal (`.removeThroughHost`).
    public mutating func removing(_ id: DownloadID, deleteFile: Bool) -> [Action] {
        if isFleet && !isRunning(id) {
            return [.removeThroughHost(id, deleteFile ? .removeWithFile : .remove)]
        }
        return stop(id, as: .removed) + [.removeHere(id, deleteFile: deleteFile, runnerStopped: isRunning(id))]
    }

    /// Whether the waiting list is this process's, in memory (a fleet's is the database's: no
    /// host holds it).
    public var holdsWaitingList: Bool { !isFleet }

    /// Whether progress noted between checkpoints without fsync may be trusted after a kill on
    /// the same boot: not by a fleet host, since another host may take the `.part` over.
    public var trustsProgressNotes: Bool { !isFleet }
}

extension [DownloadQueue.Action] {
    /// How many downloads these actions pause: runs asked to stop as paused, and waiting ones
    /// saved paused (what a pause of everything answers).
    public var pausedCount: Int {
        reduce(0) { count, action in
            switch action {
            case .savePaused(let ids): count + ids.count
            case .stopRun(_, .paused): count + 1
            default: count
            }
        }
    }
}
