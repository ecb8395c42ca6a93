/// A caller's pause, resume, pause of everything and remove, as actions. Where a change goes
/// depends on where the queue lives: this process's list (`.local`), or the fleet's database,
/// where one statement reaches every host's downloads (`.fleet`). The machine answers with the
/// actions for its backend; the manager carries them out and never asks which backend it has.
/// A refusal is an action too (`.refuse`): the caller's answer, before anything changed.
extension DownloadQueue {
    /// At start: this process's queue is what its store says was queued or running when the last
    /// process stopped; a fleet host starts claiming from the database (once: a second restore
    /// starts no second loop).
    public mutating func restore() -> [Action] {
        // Unfinished groups are checked too: a process stopped between a group's last completion
        // and its finish writes it now (in a fleet, any host's start does).
        (withFleet { $0.startClaiming().map { [.startClaiming(every: $0)] } ?? [] } ?? [.restoreQueued])
            + [.readGroups]
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

    /// Waiting downloads a pause took out of the queued list are saved paused (`records`, as
    /// saved): each takes its place among the paused, and is published and settled paused.
    public mutating func pausedSaved(_ records: [DownloadRecord]) -> [Action] {
        var actions: [Action] = []
        for record in records {
            if !isFleet { paused.insert(WaitingQueue.Entry(record)) }
            actions += [.publish(DownloadEvent(id: record.id, kind: .paused)), .settle(DownloadOutcome(record))]
        }
        return actions
    }

    /// At start (`.restoreQueued`): the records stored queued or running join the queue, and the
    /// places of those stored paused the paused half of the waiting list.
    public mutating func restored(_ records: [DownloadRecord], paused places: [WaitingQueue.Entry]) -> [Action] {
        for place in places where !isScheduled(place.id) && !isFleet { paused.insert(place) }
        return queued(records.filter(\.status.resumesAfterRestart).map(WaitingQueue.Entry.init))
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
    /// scheduled here is picked up as an add would pick it up, one still stopping as paused once
    /// its run ends (`.readd`: a queued or running one
    /// whose start found it locked by another process is tried again); in a fleet, those not
    /// queued or running already are queued again in one transaction (`.requeue`: all or none,
    /// one running on another host refuses it).
    public mutating func resuming(_ records: [DownloadRecord]) -> [Action] {
        if let done = records.first(where: { $0.status == .completed }) {
            return [Self.alreadyComplete(done.id)]
        }
        if isFleet { return [.requeue(records.filter { !$0.status.resumesAfterRestart })] }
        // One whose run still stops as paused (its pause answered at the checkpoint, before the
        // run ended) is picked up once it ends (`runEnded`): the resume is not lost.
        for record in records where entries[record.id]?.run?.stop == .paused {
            entries[record.id]?.run?.resumeAfterStop = true
        }
        return records.filter { !isScheduled($0.id) }.map { .readd($0, request: $0.request) }
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

    /// Forgets the record of a finished download (aria2's `removeDownloadResult`): one that has
    /// not finished is a conflict. One whose run stored its end (a status read already says
    /// `complete`) but has not returned yet is finished: its run is waited for (`.awaitRun`),
    /// then it is forgotten (`.forgetAfterRun`, which asks again).
    public func forgetting(_ record: DownloadRecord) -> [Action] {
        if record.status.isTerminal, isRunning(record.id) { return [.awaitRun(record.id), .forgetAfterRun(record.id)] }
        guard record.status.isTerminal, !isScheduled(record.id) else {
            return [
                .refuse(
                    HaulError(
                        .conflict,
                        "download \(record.id) is \(record.status.rawValue); only finished downloads can be forgotten"))
            ]
        }
        return [.deleteRecords([record.id])] + checkKeptGroups(of: [record.id])
    }

    /// Forgets the records of every finished download among `finished` (aria2's
    /// `purgeDownloadResult`), but those a run here has not let go of yet. An unfinished group
    /// one of them belonged to is checked once they are gone (it fails: it cannot be finished).
    public func forgettingFinished(_ finished: [DownloadID]) -> [Action] {
        let forgotten = finished.filter { !isScheduled($0) }
        return [.deleteRecords(forgotten)] + checkKeptGroups(of: forgotten)
    }

    /// A fixed count of connections for `record`'s download from its next start: a running one's
    /// runner owns its record (a change now would be overwritten at its next checkpoint), so it
    /// is a conflict.
    public func changingConnections(_ record: DownloadRecord, to connections: Int) -> [Action] {
        guard !isRunning(record.id) else {
            return [
                .refuse(
                    HaulError(
                        .conflict,
                        "download \(record.id) is running; its connections can change while it is paused or queued"))
            ]
        }
        var changed = record
        changed.request.connections = connections
        // A count named now is a fixed count.
        changed.request.growsConnections = false
        return [.saveRecord(changed)]
    }

    /// A rate limit for `record`'s download (nil: none): refused unless positive; stored, then
    /// applied to its run, if it runs, and to the record read from it (a checkpoint the run
    /// made meanwhile lands first).
    public func changingRate(_ record: DownloadRecord, to rate: Int64?) -> [Action] {
        if let rate, rate <= 0 {
            return [.refuse(HaulError(.usage, "a download's rate limit must be positive (got \(rate))"))]
        }
        var changed = record
        changed.request.maxBytesPerSecond = rate
        return [.saveRecord(changed), .applyRate(record.id, rate)]
    }

    /// New URLs for `record`'s download, first step: refused in a fleet or for a completed one;
    /// a running one stops at a checkpoint first (its runner owns the record), as queued.
    public mutating func changingSources(of record: DownloadRecord) -> [Action] {
        if let refusal = sourcesRefusal { return [.refuse(refusal)] }
        guard record.status != .completed else { return [Self.alreadyComplete(record.id)] }
        return stop(record.id, as: .queued)
    }

    /// The refusal of a change to a completed download (a resume, new URLs).
    static func alreadyComplete(_ id: DownloadID) -> Action {
        .refuse(HaulError(.conflict, "download \(id) is already complete; nothing was changed"))
    }

    /// `record` with new URLs (`url` first, then `mirrors`), for `sourcesChanged`: the
    /// credentials kept for its runs follow the request's rule (`replaceSources`: dropped for
    /// another origin).
    public mutating func renewingSources(_ record: DownloadRecord, url: RemoteURL, mirrors: [RemoteURL])
        throws(HaulError) -> DownloadRecord
    {
        var request = record.request
        if try !request.replaceSources(url: url, mirrors: mirrors) {
            giveCredentials(request.credentials, to: record.id)
        }
        return Self.withNewSources(record, request: request)
    }

    /// New URLs, second step (no run holds the record now): `renewed`, the record with them
    /// (`withNewSources`), to be saved; then `sourcesSaved`. It may have completed meanwhile.
    public func sourcesChanged(_ renewed: DownloadRecord) -> [Action] {
        renewed.status == .completed ? [Self.alreadyComplete(renewed.id)] : [.saveRecord(renewed)]
    }

    /// New URLs, saved: a paused download stays paused; any other leaves the list and is picked
    /// up again as an add would (`.readd`).
    public mutating func sourcesSaved(_ record: DownloadRecord) -> [Action] {
        record.status == .paused ? [] : left([record.id]) + [.readd(record, request: record.request)]
    }

    /// `existing` with `request`'s URLs: when its first URL is another, what its validator said
    /// belongs to the old server and is dropped.
    public static func withNewSources(_ existing: DownloadRecord, request: DownloadRequest) -> DownloadRecord {
        var record = existing
        if request.url != existing.request.url { record.validator = nil }
        record.request = request
        return record
    }

    /// Whether the waiting list is this process's, in memory (a fleet's is the database's: no
    /// host holds it).
    public var holdsWaitingList: Bool { !isFleet }

    /// Whether progress noted between checkpoints without fsync may be trusted after a kill on
    /// the same boot: not by a fleet host, since another host may take the `.part` over.
    public var trustsProgressNotes: Bool { !isFleet }
}

extension [DownloadQueue.Action] {
    /// How many records these actions delete.
    public var deletedCount: Int {
        reduce(0) { count, action in
            if case .deleteRecords(let ids) = action { count + ids.count } else { count }
        }
    }

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
