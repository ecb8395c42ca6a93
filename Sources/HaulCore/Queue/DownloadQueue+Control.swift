/// What callers change: adds and what they give, the waiting list, pause, remove, the limit and
/// the shutdown.
extension DownloadQueue {
    /// A request for download `id` gave these options (credentials, `-N`): kept in its entry for
    /// its runs. Told before anything that may start the run (an add's `namesRead`, `newMade`).
    mutating func give(_ request: DownloadRequest, to id: DownloadID) {
        entries[id, default: Entry()].given.take(request)
    }

    /// New credentials for a download (its URL changed); nil drops them.
    public mutating func giveCredentials(_ credentials: Credentials?, to id: DownloadID) {
        entries[id, default: Entry()].given.credentials = credentials
        tidy(id)
    }

    /// Downloads whose stored records say queued join the queue (queued again, or restored at
    /// start), each at the place its record gives, in one step: a free slot goes to the head of
    /// the list with all of them in it. Those already scheduled here are left alone.
    public mutating func queued(_ places: [WaitingQueue.Entry]) -> [Action] {
        let places = places.filter { !isScheduled($0.id) }
        guard !places.isEmpty else { return [] }
        let published = places.map { Action.publish(DownloadEvent(id: $0.id, kind: .queued)) }
        // A fleet's queue is the database's: whichever host has a free slot claims it.
        if isFleet { return published + [.wakeClaims] }
        return published + schedule(.added(places))
    }

    /// New downloads take their places in the waiting list while their records are saved: a
    /// slot freed meanwhile waits for them rather than go to one behind them.
    /// A fleet host has no list: the database's rows are its queue once committed.
    public mutating func adding(_ places: [WaitingQueue.Entry]) -> [Action] {
        if isFleet { return [] }
        return schedule(.adding(places))
    }

    /// The new downloads' records are saved: a slot may go to them.
    public mutating func saved(_ ids: [DownloadID]) -> [Action] {
        schedule(.saved(ids))
    }

    /// The new downloads' records could not be saved: they leave the list, and their entries go.
    public mutating func saveFailed(_ ids: [DownloadID]) -> [Action] {
        for id in ids where entries[id]?.run == nil { entries[id] = nil }
        for id in ids where unsavedPaused.remove(id) != nil { paused.remove(id) }
        return schedule(.saveFailed(ids))
    }

    /// Waiting downloads take new places, all at once (a move, and positions spread for it).
    public mutating func placed(_ places: [WaitingQueue.Entry]) -> [Action] {
        for place in places { paused.replacePlace(with: place) }
        return schedule(.placed(places))
    }

    /// Waiting downloads leave the list without running (taken out to be queued again).
    public mutating func left(_ ids: [DownloadID]) -> [Action] {
        schedule(.left(ids))
    }

    /// The number of downloads run at once changed to `limit` (under 1 counts as 1). Locally, free
    /// slots go to the head of the waiting list at once; a lower limit stops no run, it only starts
    /// fewer. A fleet host looks for work.
    public mutating func limitChanged(_ limit: Int) -> [Action] {
        if withFleet({ $0.limit = max(1, limit) }) != nil { return [.wakeClaims] }
        return schedule(.limitChanged(limit))
    }

    /// Why a pause of these downloads (each with the status its record has) is refused, all
    /// or none: a finished one that is not running here has nothing to pause.
    public func pauseRefusal(_ records: [(id: DownloadID, status: DownloadStatus)]) -> HaulError? {
        for (id, status) in records where status.isTerminal && !isRunning(id) {
            return HaulError(
                .conflict, "download \(id) is \(status.rawValue): there is nothing to pause; nothing was changed")
        }
        return nil
    }

    /// Asks a running download to stop as `status` (a remove wins over a pause or shutdown
    /// already asked: it may interrupt a verification).
    public mutating func stop(_ id: DownloadID, as status: DownloadStatus) -> [Action] {
        guard var run = entries[id]?.run else { return [] }
        if run.stop == nil || (status == .removed && run.stop != .removed) { run.stop = status }
        // A stop asked after a resume wins over it.
        run.resumeAfterStop = false
        entries[id]?.run = run
        return [.stopRun(id, as: status)]
    }

    /// A download is removed (`record`, as saved removed; it left the list before with `left`):
    /// its given options go, it is published removed unless its run said so, and whoever waited
    /// for it while it waited (`wasWaiting`) hears it ended.
    public mutating func removed(_ record: DownloadRecord, runnerSaidSo: Bool, wasWaiting: Bool) -> [Action] {
        var actions = schedule(.left([record.id]))
        paused.remove(record.id)
        entries[record.id]?.given = GivenOptions()
        entries[record.id]?.suspended = false
        tidy(record.id)
        if !runnerSaidSo { actions.append(.publish(DownloadEvent(id: record.id, kind: .removed))) }
        // A group it belongs to cannot be finished now: checked, it is kept failed and says why.
        actions += checkGroups(of: record.id, completed: false)
        if wasWaiting { actions.append(.settle(DownloadOutcome(record))) }
        return actions
    }

    /// A remove of `record`'s download carried out here (`.removeHere`), once the run it had
    /// (`runnerStopped`) stopped. One removed already is not found, unless its own run or a run
    /// stopped for this remove (`stoppedAgain`) said so. One started again meanwhile is stopped
    /// first (`.stopRun`: the caller waits for it outside the loop and asks again). Any other
    /// leaves the list before anything awaits, its `.part` (and its file, when `deleteFile` and
    /// it had completed: a name of a download that never completed may be another file) is
    /// deleted, its name released and its record saved removed; then it is published and settled.
    public mutating func removingNow(
        _ record: DownloadRecord, deleteFile: Bool, runnerStopped: Bool, stoppedAgain: Bool
    )
        -> [Action]
    {
        if record.status == .removed, !runnerStopped, !stoppedAgain {
            return [.refuse(HaulError(.notFound, "no download with id \(record.id)"))]
        }
        if isRunning(record.id) { return stop(record.id, as: .removed) }
        let wasWaiting = waiting.contains(record.id)
        var removed = record
        removed.status = .removed
        return schedule(.left([record.id])) + [
            .deleteFiles(record, final: deleteFile && record.status == .completed),
            .releaseName(directory: record.request.directory, name: record.fileName),
            .saveRecord(removed),
        ] + self.removed(removed, runnerSaidSo: runnerStopped && record.status == .removed, wasWaiting: wasWaiting)
    }

    /// Another host removed it (no host held it): its given options go.
    public mutating func forgetGiven(_ id: DownloadID) {
        entries[id]?.given = GivenOptions()
        tidy(id)
    }

    /// Shutdown: nothing more starts or is claimed. What waits is settled as queued (the next
    /// start picks it up) and every run is asked to stop as running (resumed by the next start).
    public mutating func shutdown() -> [Action] {
        guard !isShuttingDown else { return [] }
        isShuttingDown = true
        let waiting: [WaitingQueue.Entry] =
            withLocal { slots in
                slots.handle(.closed)
                return slots.takeWaiting()
            } ?? []
        settledAtShutdown = Set(waiting.map(\.id))
        var actions = waiting.map { Action.settle(DownloadOutcome(id: $0.id, status: .queued)) }
        for id in runningIDs { actions += stop(id, as: .running) }
        return actions
    }

    /// Past the shutdown's deadline: the runs still here keep their status `running` and are
    /// resumed by the next start.
    public func abandonedAtDeadline() -> [Action] {
        runningIDs.map { .settle(DownloadOutcome(id: $0, status: .running)) }
    }
}
