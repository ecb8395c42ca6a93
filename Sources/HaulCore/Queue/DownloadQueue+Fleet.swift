/// One host of a fleet: it claims downloads from the database for its free slots, and its
/// renewals' reports say which leases it lost and what other hosts asked of its runs.
extension DownloadQueue {
    /// Why a move, or an add at an index, is refused: a fleet's order is the database's, and
    /// moving a download in it is not built yet. Nil for this process's queue.
    public var reorderRefusal: HaulError? {
        isFleet
            ? HaulError(
                .conflict, "a fleet's queue cannot be reordered yet; add the download again with another priority")
            : nil
    }

    /// Why new URLs for a download are refused: not built for a fleet yet. Nil for this
    /// process's queue.
    public var sourcesRefusal: HaulError? {
        isFleet ? HaulError(.conflict, "a fleet's downloads cannot change their URLs yet; add the download again") : nil
    }

    /// The claim for this host's free slots, or nil when it has none (or is shutting down).
    /// Running and suspended downloads hold slots and are not claimed again.
    public func claimRequest() -> Action? {
        guard case .fleet(let slots) = backend, !isShuttingDown else { return nil }
        let held = Set(entries.filter { $0.value.run != nil || $0.value.suspended }.keys)
        let free = slots.limit - held.count
        return free > 0 ? .claim(limit: free, excluding: held) : nil
    }

    /// The database gave this host these downloads (at most the claim's `limit`): each starts.
    /// When it gave as many as asked, more may be waiting: look again at once.
    public mutating func claimed(_ ids: [DownloadID], limit: Int) -> [Action] {
        starting(ids, claimed: ids.count, limit: limit)
    }

    /// The same, with the records the claim read: one that cannot be run (a part of its stored
    /// form is unreadable, its credentials say, and reading it made it failed, with why:
    /// `markUnreadable`) is stored so, under this host's lease, and the lease released, instead
    /// of being run without what it needs. It counts toward the claim's size all the same.
    public mutating func claimed(_ records: [DownloadRecord], limit: Int) -> [Action] {
        var actions: [Action] = []
        for record in records where record.status == .failed {
            actions += [.storeFailed(record), .releaseLease(record.id)]
        }
        return actions
            + starting(records.filter { $0.status != .failed }.map(\.id), claimed: records.count, limit: limit)
    }

    /// Starts the claimed downloads `ids` (of `claimed` the claim gave); a claim that gave as
    /// many as it asked for may have left more: look again at once.
    private mutating func starting(_ ids: [DownloadID], claimed: Int, limit: Int) -> [Action] {
        var actions: [Action] = []
        for id in ids where !isShuttingDown && !isRunning(id) {
            actions.append(.publish(DownloadEvent(id: id, kind: .queued)))
            actions.append(begin(id, place: nil))
        }
        if claimed == limit, limit > 0 { actions.append(.wakeClaims) }
        return actions
    }

    /// A renewal answered at `now`: leases lost stop without writing, other hosts' commands apply
    /// to the runs here, downloads held through an outage start again (still ours), and free
    /// slots are filled by a claim.
    public mutating func renewed(_ report: LeaseReport, now: Double) -> [Action] {
        withFleet { $0.lastRenewal = now }
        var actions: [Action] = []
        for id in report.lost.sorted(by: { $0.rawValue < $1.rawValue }) {
            entries[id]?.suspended = false
            if isRunning(id) { actions.append(.abandonRun(id)) }
            tidy(id)
        }
        for (id, command) in report.commands.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where isRunning(id) {
            switch command {
            case .pause: actions += stop(id, as: .paused)
            case .remove, .removeWithFile:
                actions.append(.removeForAnotherHost(id, deleteFile: command == .removeWithFile))
            }
        }
        let suspended = entries.filter { $0.value.suspended }.keys.sorted { $0.rawValue < $1.rawValue }
        for id in suspended where !isShuttingDown { actions.append(begin(id, place: nil)) }
        if let claim = claimRequest() { actions.append(claim) }
        return actions
    }

    /// A fleet's pause, decided by the database for all of `results`' downloads in one statement
    /// (their hosts hear it at once): one running here is asked to stop; one no host held was
    /// paused by the statement itself and is published paused (unless it was already); one held
    /// by another host is that host's to stop, and its caller waits for it (`.awaitRemote`).
    public mutating func fleetPaused(_ results: [DownloadID: FleetRequestResult]) -> [Action] {
        var actions: [Action] = []
        var elsewhere: [Action] = []
        for (id, result) in results.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            if isRunning(id) {
                actions += stop(id, as: .paused)
            } else if case .applied(_, let before) = result {
                if before != .paused { actions.append(.publish(DownloadEvent(id: id, kind: .paused))) }
            } else {
                elsewhere.append(.awaitRemote(id, .pause))
            }
        }
        return actions + elsewhere
    }

    /// A renewal failed at `now`. Past half a lease since the last one that succeeded, every run
    /// stops at a checkpoint, well before another host may take it over; each keeps its lease
    /// and goes on once the database is back (`runEnded` with `holdsLease`).
    public mutating func renewalFailed(now: Double) -> [Action] {
        guard let (outage, lease) = withFleet({ ($0.outage(now: now), $0.leaseTimeout) }), outage > lease / 2 else {
            return []
        }
        return runningIDs.flatMap { stop($0, as: .running) }
    }

    /// The host's loop woke at `now` (a tick, a freed slot, a new download): renew when due (or
    /// when another host left a command, or downloads wait for the database), else claim for free
    /// slots. The renewal's answer claims after it (`renewed`).
    public mutating func tick(now: Double) -> [Action] {
        guard !isShuttingDown else { return [] }
        let suspended = holdsSuspended
        guard let due = withFleet({ $0.renewalDue(now: now, suspended: suspended) }) else { return [] }
        let groups: [Action] = withFleet { $0.groupCheckDue(now: now) } == true ? [.readGroups] : []
        if due { return [.renewLeases] + groups }
        return (claimRequest().map { [$0] } ?? []) + groups
    }

    /// Another host notified a command for this one: the next tick renews, due or not, and so
    /// hears it; the loop wakes for it at once.
    public mutating func commandNoticed() -> [Action] {
        withFleet { $0.renewNow = true } == nil ? [] : [.wakeClaims]
    }

    /// A caller asked another host, through the database, to pause or remove `id` at `now`, and
    /// waits for it: tell the queue each reading of its record (`remoteSeen`) until it answers.
    public mutating func remoteAsked(_ command: FleetCommand, of id: DownloadID, now: Double) -> FleetBackend.RemoteAsk
    {
        withFleet { $0.ask(command, of: id, now: now) } ?? FleetBackend.RemoteAsk(id: id, command: command, number: 0)
    }

    /// The record of a download another host was asked to pause or remove shows `status` at
    /// `now`, held by `holder`: the caller is answered once it shows what was asked (or ended
    /// meanwhile), refused with `conflict` once `FleetBackend.remoteDeadline` passed without it,
    /// and otherwise reads it again.
    public mutating func remoteSeen(
        _ ask: FleetBackend.RemoteAsk, status: DownloadStatus, holder: String?, now: Double
    ) -> [Action] {
        guard let answer = withFleet({ $0.answer(ask, status: status, holder: holder, now: now) }) else { return [] }
        return answer.map { [$0] } ?? []
    }

    /// The caller of `remoteAsked` stopped waiting (its read of the record failed).
    public mutating func remoteAbandoned(_ ask: FleetBackend.RemoteAsk) {
        withFleet { $0.forget(ask) }
    }

    /// The shared store applied a pause or remove of a download no host held (`applied`, as it
    /// is now; `before`, its status before): a remove deletes its `.part` (and its file, when
    /// asked and it had completed) and forgets what its requests gave; either is published.
    public mutating func fleetApplied(_ command: FleetCommand, _ applied: DownloadRecord, before: DownloadStatus)
        -> [Action]
    {
        guard command != .pause else { return [.publish(DownloadEvent(id: applied.id, kind: .paused))] }
        forgetGiven(applied.id)
        return [
            .deleteFiles(applied, final: command == .removeWithFile && before == .completed),
            .publish(DownloadEvent(id: applied.id, kind: .removed)),
        ]
    }
}
