import HaulCore
import Logging

/// Scheduling: which waiting download starts when a slot frees, and the life of one start
/// (load the record, take the cross-process lock, run, release).
extension DownloadManager {
    func existing(_ id: DownloadID) async throws -> DownloadRecord {
        guard let record = try await store.record(id), record.status != .removed else {
            throw HaulError(.notFound, "no download with id \(id)")
        }
        return record
    }

    /// Running or waiting in this process (in a fleet: held here, running or suspended).
    func isScheduled(_ id: DownloadID) -> Bool {
        active[id] != nil || slots.waiting.contains(id) || fleetState.suspended.contains(id)
    }

    /// Puts these downloads in the waiting list, each at the place its record gives, in one
    /// step: a slot that is free goes to the head of the list with all of them in it.
    func enqueue(_ records: [DownloadRecord]) {
        let records = records.filter { !isScheduled($0.id) }
        guard !records.isEmpty else { return }
        for record in records { hub.publish(DownloadEvent(id: record.id, kind: .queued)) }
        if fleet != nil {
            // The queue is the database's: whichever host has a free slot claims it.
            wakeFleet()
            return
        }
        schedule(.added(records.map(WaitingQueue.Entry.init)))
    }

    /// Tells the slots what changed and starts what they give a slot to: each the head of the
    /// waiting list as it stands after the change (`QueueSlots`).
    /// `signalsIdle`: false while the caller still has to settle what it changed.
    func schedule(_ change: QueueSlots.Event, signalsIdle: Bool = true) {
        if fleet != nil { wakeFleet() }
        for entry in slots.handle(change) {
            configuration.logger.debug("a slot goes to the head of the queue", metadata: [
                "id": "\(entry.id)", "running": "\(slots.running.count)", "limit": "\(slots.limit)", "waiting": "\(slots.waiting.count)"])
            start(entry.id, place: entry)
        }
        if signalsIdle { signalIdleIfNeeded() }
    }

    /// Starts a run of `id`; `place`, the place it had in the waiting list, is the one its run
    /// stores (a move made just before may still be on its way to the store).
    func start(_ id: DownloadID, place: WaitingQueue.Entry? = nil) {
        let stop = StopSignal()
        let limiter = RateLimiter(rate: nil, clock: clock)
        var settings = configuration.machineSettings
        settings.notesProgress = notes != nil
        var runner = DownloadRunner(
            store: store, transport: transport, clock: clock, names: names, settings: settings,
            limiters: [limiter, globalLimiter], roots: configuration.downloadRoots, notes: notes, budgets: budgets,
            makeWriter: { [directorySyncs] directory, name, exclusive, connections, io in
                try await FileChunkWriter.open(in: directory, name: name, exclusive: exclusive,
                                               batchSize: FileChunkWriter.batchSize(connections: connections), io: io,
                                               syncs: directorySyncs)
            },
            logger: configuration.logger, metrics: metrics, stop: stop, emit: { [hub, live] event in
                live.note(event)
                hub.publish(event)
            }, io: DiskIO(calls: configuration.fileCalls), refresher: configuration.refreshCommand.map { URLRefresher(command: $0) },
            saved: { [live] record in live.saved(record) })
        let store = store
        let hub = hub
        let locks = Result { () throws(HaulError) -> DownloadLocks in try downloadLocks() }
        let given = self.given[id]
        generations += 1
        let generation = generations
        runner.directorySyncs = directorySyncs
        runner.transferEnded = { Task { await self.transferEnded(id, generation: generation) } }
        let task = Task {
            let launch = await Self.launch(id, store: store, hub: hub, locks: locks, given: given,
                                           place: place, runner: runner)
            await self.finished(id, generation: generation, launch)
        }
        active[id] = Active(task: task, stop: stop, limiter: limiter, generation: generation)
    }

    /// A run's transfer ended: its slot goes to the next download while it verifies, publishes
    /// and saves (`QueueSlots.finishing`). A fleet host's runs are not the queue's: its claims
    /// count every run until it ends.
    func transferEnded(_ id: DownloadID, generation: UInt64) {
        guard fleet == nil, active[id]?.generation == generation else { return }
        schedule(.transferEnded(id))
    }

    /// What became of one start.
    enum Launch: Sendable {
        /// It ran; the record as persisted when it stopped, and what the run cost on the wire.
        /// `notModified`: `-N` got a 304; nothing was downloaded.
        case ran(DownloadRecord, TransferStats, notModified: Bool)
        /// Its record is gone or removed: nothing to run.
        case gone
        /// It could not run here: another process holds it, or the store or the lock failed.
        case refused(HaulError)
    }

    /// Loads the record, takes the download's lock for as long as it runs, and runs it.
    nonisolated static func launch(
        _ id: DownloadID, store: any DownloadStore, hub: EventHub, locks: Result<DownloadLocks, HaulError>,
        given: GivenOptions?, place: WaitingQueue.Entry?, runner: DownloadRunner
    ) async -> Launch {
        var record: DownloadRecord
        do {
            guard let stored = try await store.record(id), stored.status != .removed else { return .gone }
            record = stored
            // The latest given win over stored ones (a changed password).
            if let credentials = given?.credentials { record.request.credentials = credentials }
            if let place { (record.request.priority, record.position) = (place.priority, place.position) }
            given?.timestamps?.apply(to: &record.request)
            runner.limiters.first?.setRate(stored.request.maxBytesPerSecond.flatMap(ByteRate.limit))
        } catch {
            return refuse(id, HaulError.from(error, otherwise: .store), hub: hub)
        }
        let lock: DownloadLocks.Lease
        do {
            guard let acquired = try locks.get().acquire(id) else {
                // Another process runs it: leave its record alone, report, move on.
                return refuse(id, HaulError(.inUse, "\(record.request.url) is being downloaded by another haul process"), hub: hub)
            }
            lock = acquired
        } catch {
            return refuse(id, HaulError.from(error, otherwise: .fileSystem), hub: hub)
        }
        defer { withExtendedLifetime(lock) {} }
        let (ended, transfer, notModified) = await runner.runCounting(record)
        return .ran(ended, transfer, notModified: notModified)
    }

    private nonisolated static func refuse(_ id: DownloadID, _ error: HaulError, hub: EventHub) -> Launch {
        hub.publish(DownloadEvent(id: id, kind: .failed(error)))
        return .refused(error)
    }

    func finished(_ id: DownloadID, generation: UInt64, _ launch: Launch) async {
        let current = active[id]?.generation == generation
        if current {
            active[id] = nil
            live.ended(id)
            // The slot is freed and given to the head of the queue in one step, before anything
            // here awaits: no other change ever sees a free slot with downloads waiting. Idle is
            // told once its outcome is settled, below.
            schedule(.runEnded(id), signalsIdle: false)
        }
        if current { await fleetRunEnded(id, launch) }
        switch launch {
        case .ran(let record, let transfer, let notModified):
            // From here the store's record (and, once complete, the file itself) guards the name.
            await names.release(directory: record.request.directory, name: record.fileName)
            // Done with: a re-add after its file went missing supplies them again.
            if record.status == .completed { given[id] = nil }
            if current { settle(DownloadOutcome(record, alreadyComplete: notModified, transfer: transfer)) }
        case .gone:
            if current { settle(DownloadOutcome(id: id, status: .removed)) }
        case .refused(let error):
            if current { settle(DownloadOutcome(id: id, status: .queued, error: error)) }
        }
        // A fleet host claims for the freed slot once its lease is settled.
        if fleet != nil { wakeFleet() }
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

    /// A download left this process's schedule: tells whoever waits for it.
    func settle(_ outcome: DownloadOutcome) {
        outcomeHub.publish(outcome)
    }

    func signalIdleIfNeeded() {
        if active.isEmpty { runsEnded?.finish() }
        guard active.isEmpty, slots.waiting.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
