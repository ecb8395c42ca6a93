import HaulCore
import Logging
import NIOConcurrencyHelpers

/// Scheduling: a start the queue gives (its runner made and handed to the task group), a
/// transfer's and a run's end told to the queue. The start itself is the runner's (`launch`).
extension DownloadManager {
    func existing(_ id: DownloadID) async throws -> DownloadRecord {
        try await store.existing(id)
    }

    /// Running or waiting in this process (in a fleet: held here, running or suspended).
    func isScheduled(_ id: DownloadID) -> Bool {
        queue.isScheduled(id)
    }

    /// Puts these downloads in the queue, each at the place its record gives, in one step: a
    /// slot that is free goes to the head of the list with all of them in it.
    func enqueue(_ records: [DownloadRecord]) async {
        await perform(queue.queued(records.map(WaitingQueue.Entry.init)))
    }

    /// Starts a run of `id` (the queue's `startRun`); `place`, the place it had in the waiting
    /// list, is the one its run stores (a move made just before may still be on its way to the
    /// store); `copy`, the file of a twin that completed with the digest this download's must have.
    func start(
        _ id: DownloadID, generation: UInt64, place: WaitingQueue.Entry?, given: GivenOptions?, copy: String? = nil,
        probe: Bool = false
    ) {
        configuration.logger.debug(
            "a run starts",
            metadata: [
                "id": "\(id)", "running": "\(queue.runCount)", "limit": "\(queue.limit)",
                "waiting": "\(queue.waiting.count)",
            ])
        let stop = StopSignal()
        let limiter = RateLimiter(rate: nil, clock: clock)
        var settings = configuration.machineSettings
        settings.notesProgress = notes != nil
        settings.smallOverHTTP2 = probe
        var runner = DownloadRunner(
            store: store, transport: transport, clock: clock, names: names, settings: settings,
            limiters: [limiter, globalLimiter], roots: configuration.downloadRoots, notes: notes, budgets: budgets,
            makeWriter: { [directorySyncs] directory, name, exclusive, connections, io in
                try await FileChunkWriter.open(
                    in: directory, name: name, exclusive: exclusive,
                    batchSize: FileChunkWriter.batchSize(connections: connections), io: io,
                    syncs: directorySyncs)
            },
            logger: configuration.logger, metrics: metrics, stop: stop,
            emit: { [hub, live] event in
                live.note(event)
                hub.publish(event)
            }, io: DiskIO(calls: configuration.fileCalls),
            refresher: configuration.refreshCommand.map { URLRefresher(command: $0) },
            saved: { [live] record in live.saved(record) }, saving: { [live] record in live.saving(record) })
        let locks = Result { () throws(HaulError) -> DownloadLocks in try downloadLocks() }
        runner.directorySyncs = directorySyncs
        runner.contentStore = configuration.contentStore
        runner.twinFile = copy
        runner.transferEnded = { [inbox] finishBytes in
            inbox.post(.transferEnded(id, generation: generation, finishBytes: finishBytes))
        }
        if probe, let host = place?.probeHost {
            runner.slotGate = SlotGate(
                ask: { [inbox] in inbox.post(.slotAsked(id, generation: generation)) },
                spokeHTTP2: { [inbox, http2Hosts] in
                    // Once per host: every probe over HTTP/2 would otherwise cost the loop a turn.
                    if http2Hosts.withLockedValue({ $0.insert(host).inserted }) { inbox.post(.spokeHTTP2(host)) }
                })
        }
        let ended = Completion()
        let started = runner
        // A child of the manager's task group (`run()`); its end goes back through the inbox.
        spawn { [inbox] in
            let ending = await started.launch(id, locks: locks, given: given, place: place)
            guard !inbox.post(.runEnded(id, generation: generation, ending, ended: ended)) else { return }
            // The loop has ended (a run left past the shutdown's deadline): settled here.
            await self.finished(id, generation: generation, ending)
            ended.finish()
        }
        handles[id] = RunHandle(ended: ended, stop: stop, limiter: limiter, gate: runner.slotGate)
    }

    /// A run's transfer ended, its finish to go through `finishBytes`: the queue may give its
    /// slot to the next download while it verifies, publishes and saves.
    func transferEnded(_ id: DownloadID, generation: UInt64, finishBytes: Int64) async {
        configuration.logger.debug(
            "a transfer ends",
            metadata: ["id": "\(id)", "finishBytes": "\(finishBytes)", "running": "\(queue.runCount)"])
        await perform(queue.transferEnded(id, generation: generation, finishBytes: finishBytes))
    }

    /// A probe's response needs a slot (`SlotProbes`): the queue grants it one now or later.
    func slotAsked(_ id: DownloadID, generation: UInt64) async {
        configuration.logger.debug(
            "a probe asks for a slot", metadata: ["id": "\(id)", "running": "\(queue.runCount)"])
        await perform(queue.slotAsked(id, generation: generation))
    }

    /// A host answered a probe over HTTP/2: more of its downloads may go without a slot.
    func spokeHTTP2(_ host: String) async {
        await perform(queue.spokeHTTP2(host))
    }

    /// A run ended: the queue frees its slot and gives it on, and says what to settle.
    func finished(_ id: DownloadID, generation: UInt64, _ ending: DownloadQueue.RunEnding) async {
        configuration.logger.debug(
            "a run ends",
            metadata: [
                "id": "\(id)", "ending": "\(ending.summary)", "running": "\(queue.runCount)",
                "waiting": "\(queue.waiting.count)",
            ])
        let holdsLease = fleet?.holds(id) ?? false
        await perform(queue.runEnded(id, generation: generation, ending, holdsLease: holdsLease))
        signalIdleIfNeeded()
    }

    /// The cross-process locks, opened at the first start.
    func downloadLocks() throws(HaulError) -> DownloadLocks {
        if let locks { return locks }
        do {
            let opened = try DownloadLocks(stateDirectory: configuration.stateDirectory)
            locks = opened
            return opened
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }

    func signalIdleIfNeeded() {
        if handles.isEmpty { runsEnded?.finish() }
        guard queue.isIdle else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
