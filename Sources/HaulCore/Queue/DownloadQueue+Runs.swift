/// The life of one run, as the queue sees it: its transfer ends (its slot goes on), then the
/// run ends, with what became of it.
extension DownloadQueue {
    /// What became of one start.
    public enum RunEnding: Sendable, Hashable {
        /// It ran; the record as persisted when it stopped, and what the run cost on the wire.
        /// `notModified`: `-N` got a 304; nothing was downloaded.
        case ran(DownloadRecord, TransferStats, notModified: Bool)
        /// Its record is gone or removed: nothing to run.
        case gone
        /// It could not run here: another process holds it, or the store or the lock failed.
        case refused(HaulError)

        /// In a few words, for logs: the stored status it ended with, or why it did not run.
        public var summary: String {
            switch self {
            case .ran(let record, _, _): record.status.rawValue
            case .gone: "gone"
            case .refused(let error): "refused: \(error.message)"
            }
        }
    }

    /// A run's transfer ended (every byte in, every connection closed), its finish to go through
    /// `finishBytes` (sync, verify): locally the slot of a short finish goes to the next download
    /// while it verifies, publishes and saves (`QueueSlots.finishing`, `shortFinish`). A fleet
    /// host's claims count every run until it ends.
    public mutating func transferEnded(_ id: DownloadID, generation: UInt64, finishBytes: Int64) -> [Action] {
        guard case .local = backend, entries[id]?.run?.generation == generation else { return [] }
        return schedule(.transferEnded(id, finishBytes: finishBytes))
    }

    /// A probe's response needs a slot before its body is read (`SlotProbes.needsSlot`): it gets
    /// one now (`grantSlot`), or when one is free and it comes first. A stale run asks nothing.
    public mutating func slotAsked(_ id: DownloadID, generation: UInt64) -> [Action] {
        guard case .local = backend, entries[id]?.run?.generation == generation else { return [] }
        return schedule(.slotAsked(id))
    }

    /// A host answered a probe over HTTP/2: more of its downloads may be sent without a slot.
    public mutating func spokeHTTP2(_ host: String) -> [Action] {
        guard case .local = backend else { return [] }
        return schedule(.spokeHTTP2(host))
    }

    /// A run ended. `holdsLease`: a fleet host still holds the download's lease (a run stopped
    /// by the database's loss keeps it). A run that is not the current one (a start that
    /// replaced it) changes nothing but its name.
    ///
    /// The slot is freed and given to the head of the queue first, in the same step: no other
    /// change ever sees a free slot with downloads waiting.
    public mutating func runEnded(_ id: DownloadID, generation: UInt64, _ ending: RunEnding, holdsLease: Bool = false)
        -> [Action]
    {
        let current = entries[id]?.run?.generation == generation
        let resumed = current && entries[id]?.run?.resumeAfterStop == true
        var actions: [Action] = []
        if current {
            actions.append(.dropRun(id))
            entries[id]?.run = nil
            if isFleet {
                if case .ran(let record, _, _) = ending, record.status == .running, !isShuttingDown, holdsLease {
                    // Stopped by the outage: held here, started again once a renewal proves it ours.
                    entries[id]?.suspended = true
                } else {
                    actions.append(.releaseLease(id))
                }
            } else {
                actions += schedule(.runEnded(id, copy: Self.completedFile(ending)))
            }
        }
        switch ending {
        case .ran(let record, let transfer, let notModified):
            actions.append(.releaseName(directory: record.request.directory, name: record.fileName))
            // Done with: a re-add after its file went missing supplies them again.
            if record.status == .completed { entries[id]?.given = GivenOptions() }
            // Stopped paused: it keeps its place in the waiting list, skipped until resumed.
            // One resumed while it stopped is picked up again at its place once settled.
            let readd = resumed && record.status == .paused && !isFleet
            if current, record.status == .paused, !isFleet, !readd { paused.insert(WaitingQueue.Entry(record)) }
            if current {
                // Its groups first: one it completes is finished before the outcome is told.
                if record.status == .completed { actions += checkGroups(of: id) }
                actions.append(.settle(DownloadOutcome(record, alreadyComplete: notModified, transfer: transfer)))
            }
            if readd { actions.append(.readd(record, request: record.request)) }
        case .gone:
            if current { actions.append(.settle(DownloadOutcome(id: id, status: .removed))) }
        case .refused(let error):
            // This start failed (the event says so); the record is left as it is, queued or
            // running for the process that holds it, and the outcome says so.
            actions.append(.publish(DownloadEvent(id: id, kind: .failed(error))))
            if current { actions.append(.settle(DownloadOutcome(id: id, status: .queued, error: error))) }
        }
        // A fleet host claims for the freed slot once its lease is settled.
        if isFleet, current { actions.append(.wakeClaims) }
        tidy(id)
        return actions
    }

    /// The file a run completed, where the downloads held for its digest copy it from; nil when it
    /// did not complete or its request names no digest.
    static func completedFile(_ ending: RunEnding) -> String? {
        guard case .ran(let record, _, _) = ending, record.status == .completed, record.request.checksum != nil,
            let name = record.fileName
        else { return nil }
        return Paths.join(record.request.directory, name)
    }
}
