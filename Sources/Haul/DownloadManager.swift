#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CoreMetrics
import HaulCore
import HaulStore
import Logging

/// The public face of the engine: a persistent queue of downloads, at most
/// `maxConcurrentDownloads` running at once, each driven by its own state machine.
///
/// ```swift
/// let manager = try await DownloadManager(configuration: .init(stateDirectory: dir))
/// let record = try await manager.add(DownloadRequest(url: RemoteURL(text), destination: .directory(dir)))
/// let outcome = try await manager.outcome(of: record.id)   // never misses the end
/// ```
///
/// `events()` carries progress for display and may drop old events when its reader falls
/// behind; `outcomes()` and `outcome(of:)` never drop anything.
public actor DownloadManager {
    public struct Configuration: Sendable {
        /// Where the SQLite store lives (`haul.sqlite` inside).
        public var stateDirectory: String
        public var maxConcurrentDownloads: Int
        /// How often, while bytes flow, data is fsynced and the offset committed: the most a
        /// crash can cost (DESIGN rule 2).
        public var checkpointInterval: Duration
        /// How often progress events are emitted per download.
        public var progressInterval: Duration
        public var retry: RetryPolicy
        public var http: AsyncHTTPTransport.Configuration
        /// Which HTTP versions downloads may use (`--http1.1`, `--http2`); by default HTTP/2 for
        /// a download over one connection when the server offers it.
        public var httpVersions: HTTPVersionPolicy
        /// No segment smaller than this is split off for another connection (`-k`).
        public var minimumSegmentSize: Int64
        /// Bytes per second for everything this manager downloads; nil (or under 1) for no limit.
        public var maxBytesPerSecond: Int64?
        /// Retries, restarts and why, refused connections, failed checkpoints. Silent by default.
        public var logger: Logger
        /// Where the engine's own measurements go (checkpoint latency); nil records nothing.
        public var metricsFactory: (any MetricsFactory)?
        /// Whether the store keeps requests' credentials, so a resume after a restart has them
        /// (the daemon: its store is private, 0600). `haul get` keeps none: a re-run supplies
        /// them again, and until then they live only in memory.
        public var keepsCredentials: Bool
        /// The directories downloads may be written in (the daemon's `-d` and `--allow-dir`):
        /// each download's directory is resolved beneath the one that contains it whenever a
        /// run uses it, following no symbolic link below it, and one outside them all fails.
        /// Nil (`haul get`): each download's directory is its own root; links inside it are
        /// still never followed.
        public var downloadRoots: [String]?
        /// This boot's identity: progress noted between checkpoints without fsync is trusted
        /// after a killed process only on the same boot. Nil reads the system's
        /// (`/proc/sys/kernel/random/boot_id`; none elsewhere, and then nothing is noted).
        /// Tests set their own to play a reboot.
        public var bootID: String?
        /// Connections to one host at once, over every download of this manager
        /// (`--max-connections-per-host`), shared fairly; nil: only each download's own `-x`.
        /// Either way a host that refuses a connection (429, 503) gets fewer for a while.
        public var maxConnectionsPerHost: Int?
        /// Run through `/bin/sh -c` for a fresh URL when a download's signed URL expires
        /// (`--refresh-command`, `URLRefresher`); nil: the download fails as `url-expired`,
        /// keeping its bytes, until it is given one. Never set over an API.
        public var refreshCommand: String?
        /// A fleet host's renewal, which also hears other hosts' commands when no notification
        /// brought them (`haul_commands`): every second by default, and never less often than
        /// a quarter of the lease. A test sets it long to show that notifications deliver.
        public var fleetRenewInterval: Duration?
        /// The system calls that write, sync and close each `.part`; a test's can hold one
        /// download's writes back.
        var fileCalls = FileCalls.system

        public init(
            stateDirectory: String,
            maxConcurrentDownloads: Int = 3,
            checkpointInterval: Duration = .seconds(1),
            progressInterval: Duration = .milliseconds(250),
            retry: RetryPolicy = .init(),
            http: AsyncHTTPTransport.Configuration = .init(),
            minimumSegmentSize: Int64 = 1 << 20,
            maxBytesPerSecond: Int64? = nil,
            logger: Logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: (any MetricsFactory)? = nil,
            keepsCredentials: Bool = false,
            downloadRoots: [String]? = nil,
            bootID: String? = nil,
            maxConnectionsPerHost: Int? = nil,
            httpVersions: HTTPVersionPolicy = .automatic
        ) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.httpVersions = httpVersions
            self.stateDirectory = stateDirectory
            self.maxConcurrentDownloads = maxConcurrentDownloads
            self.checkpointInterval = checkpointInterval
            self.progressInterval = progressInterval
            self.retry = retry
            self.http = http
            self.minimumSegmentSize = minimumSegmentSize
            self.maxBytesPerSecond = maxBytesPerSecond
            self.logger = logger
            self.metricsFactory = metricsFactory
            self.keepsCredentials = keepsCredentials
            self.downloadRoots = downloadRoots
            self.bootID = bootID
        }

        /// What every download's state machine is told.
        var machineSettings: DownloadStateMachine.Settings {
            DownloadStateMachine.Settings(
                retry: retry, minimumSegment: max(1, minimumSegmentSize),
                minimumSteal: min(128 << 10, max(1, minimumSegmentSize)),
                checkpointInterval: checkpointInterval.seconds, tickInterval: min(progressInterval, checkpointInterval).seconds,
                httpVersions: httpVersions, refreshesURL: refreshCommand != nil)
        }
    }

    struct Active {
        var task: Task<Void, Never>
        var stop: StopSignal
        /// The download's own rate limit, changeable while it runs.
        var limiter: RateLimiter
        /// Which start this is: only the task that started it may clear it.
        var generation: UInt64
    }

    public let configuration: Configuration
    let store: any DownloadStore
    /// The shared store when this manager is one host of a fleet: the queue is then the
    /// database's, claimed with leases (see `DownloadManager+Fleet.swift`).
    let fleet: (any SharedQueueStore)?
    var fleetState = FleetState()
    let transport: any HTTPTransport
    private let ownedTransport: AsyncHTTPTransport?
    /// Closes the store this manager opened or was handed to own; nil for an injected one.
    private let closeStore: (@Sendable () async -> Void)?
    let clock: any HaulClock
    let names: FileNameClaims
    let hub = EventHub()
    let outcomeHub = OutcomeHub()
    let metrics: EngineMetrics
    /// Progress noted between checkpoints, trusted after a kill on the same boot; nil in a
    /// fleet (another host may take a `.part` over) or where the system gives no boot id.
    let notes: ProgressNotes?
    /// The limit shared by every download of this manager.
    public nonisolated let globalLimiter: RateLimiter
    /// The connection budget of each host, shared by every download of this manager.
    let budgets: HostBudgets
    /// The latest progress of every running download, for listings and the summary.
    nonisolated let live = LiveProgress()
    var maxConcurrent: Int
    var active: [DownloadID: Active] = [:]
    /// Waiting downloads: ids and places only; a record stays in the store until its download
    /// starts, so ten thousand queued cost about 100 bytes each.
    var pending = PendingQueue()
    /// The last queue position handed out: positions only grow, so the newest goes last.
    private var lastPosition: Int64 = 0
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    var isShuttingDown = false
    var generations: UInt64 = 0
    var locks: DownloadLocks?
    /// Credentials given with requests, for their runs: a store that keeps none (`haul get`)
    /// returns records without them.
    var secrets: [DownloadID: Credentials] = [:]
    /// `-N` and `--remote-time` given with requests, for their runs: like credentials, a property
    /// of the command (run again, it gives them again), in no store.
    var timestampOptions: [DownloadID: GivenTimestamps] = [:]
    /// Queue changes (add, pause, resume, move, remove, restore) run one at a time: the actor
    /// alone does not serialise them, since every await lets another call in between a check
    /// and the write that depends on it.
    private var queueBusy = false
    /// Adds waiting to be saved together (`drainAdds`), and whether a task is draining them.
    var addLine: [WaitingAdd] = []
    var addsDraining = false
    private var queueWaiters: [CheckedContinuation<Void, Never>] = []
    private var shutdownTask: Task<Void, Never>?

    /// Opens (creating if needed) the SQLite store in `configuration.stateDirectory` and uses
    /// AsyncHTTPClient. Call `shutdown()` when done.
    public init(configuration: Configuration) async throws {
        try Self.prepareStateDirectory(configuration.stateDirectory)
        let store = try await SQLiteDownloadStore.open(path: DestinationFiles.join(configuration.stateDirectory, "haul.sqlite"),
                                                       keepsCredentials: configuration.keepsCredentials)
        let transport = AsyncHTTPTransport(configuration: configuration.http, logger: configuration.logger)
        self.init(configuration: configuration, store: store, transport: transport, clock: ClockAdapter(ContinuousClock()),
                  ownedTransport: transport, closeStore: { try? await store.close() })
    }

    /// Uses `store` (a fleet's shared store) with AsyncHTTPClient; the state directory keeps the
    /// download locks. The manager owns the store: `shutdown()` closes a shared one.
    public init(configuration: Configuration, store: any DownloadStore) async throws {
        try Self.prepareStateDirectory(configuration.stateDirectory)
        let transport = AsyncHTTPTransport(configuration: configuration.http, logger: configuration.logger)
        var closeStore: (@Sendable () async -> Void)?
        if let fleet = store as? any SharedQueueStore { closeStore = { await fleet.close() } }
        self.init(configuration: configuration, store: store, transport: transport, clock: ClockAdapter(ContinuousClock()),
                  ownedTransport: transport, closeStore: closeStore)
    }

    private static func prepareStateDirectory(_ path: String) throws {
        do {
            // The store keeps request headers (cookies, tokens): a new state directory is private.
            let existed = DestinationFiles.exists(path)
            try DestinationFiles.makeDirectory(path)
            if !existed { chmod(path, 0o700) }
        } catch let error as HaulError {
            throw HaulError(error.code, "cannot use state directory \(path): \(error.message)")
        }
    }

    /// Injects every dependency: tests use their own store, transport or clock.
    public init(configuration: Configuration, store: any DownloadStore, transport: any HTTPTransport, clock: any HaulClock) {
        self.init(configuration: configuration, store: store, transport: transport, clock: clock, ownedTransport: nil, closeStore: nil)
    }

    private init(
        configuration: Configuration, store: any DownloadStore, transport: any HTTPTransport, clock: any HaulClock,
        ownedTransport: AsyncHTTPTransport?, closeStore: (@Sendable () async -> Void)?
    ) {
        self.configuration = configuration
        self.store = store
        self.fleet = store as? any SharedQueueStore
        self.transport = transport
        self.clock = clock
        self.names = FileNameClaims(store: store)
        self.maxConcurrent = max(1, configuration.maxConcurrentDownloads)
        self.metrics = EngineMetrics(factory: configuration.metricsFactory)
        let boot = configuration.bootID ?? ProgressNotes.systemBootID()
        self.notes = fleet == nil && boot != nil
            ? ProgressNotes(directory: Paths.join(configuration.stateDirectory, "progress"), boot: boot) : nil
        self.globalLimiter = RateLimiter(rate: configuration.maxBytesPerSecond.flatMap(ByteRate.limit), clock: clock)
        self.budgets = HostBudgets(limit: configuration.maxConnectionsPerHost, clock: clock)
        self.ownedTransport = ownedTransport
        self.closeStore = closeStore
    }

    // MARK: Events

    /// Every download's events from now on.
    public nonisolated func events() -> AsyncStream<DownloadEvent> { hub.stream() }

    /// One download's events from now on.
    public nonisolated func events(for id: DownloadID) -> AsyncStream<DownloadEvent> { hub.stream(filter: id) }

    /// From now on, one outcome per download that leaves this process's schedule (finished,
    /// paused, stopped by a shutdown, found complete when added again, or unable to start
    /// here). Never drops one: subscribe before adding, and read them all. Ends at shutdown.
    public nonisolated func outcomes() -> AsyncStream<DownloadOutcome> { outcomeHub.stream() }

    /// Waits until the download is neither running nor queued in this process, and says how it
    /// ended. Returns at once for a download that is not scheduled here.
    public func outcome(of id: DownloadID) async throws -> DownloadOutcome {
        let stream = outcomeHub.stream(filter: id)
        if !isScheduled(id) { return DownloadOutcome(try await existingOrRemoved(id)) }
        for await outcome in stream { return outcome }
        // The manager shut down before it ended.
        return DownloadOutcome(try await existingOrRemoved(id))
    }

    /// The record, removed ones included; throws `notFound` when there is none.
    func existingOrRemoved(_ id: DownloadID) async throws -> DownloadRecord {
        guard let record = try await store.record(id) else { throw HaulError(.notFound, "no download with id \(id)") }
        return record
    }

    // MARK: Queue

    /// Adds a download, or picks up the existing one for the same URL and destination: a
    /// paused, failed or interrupted one resumes from its checkpoint; a running or queued one
    /// is not started twice; a completed one whose file is intact is reported complete.
    @discardableResult
    public func add(_ request: DownloadRequest) async throws -> DownloadRecord {
        try await add([request])[0]
    }

    /// Runs `body` when no other queue change is running.
    func serialized<T>(_ body: () async throws -> T) async rethrows -> T {
        while queueBusy { await withCheckedContinuation { queueWaiters.append($0) } }
        queueBusy = true
        defer {
            queueBusy = false
            if !queueWaiters.isEmpty { queueWaiters.removeFirst().resume() }
        }
        return try await body()
    }

    /// The least distance between the positions of downloads added one after another.
    static let positionGap: Int64 = 64

    /// A fresh queued record at the end of its priority, its explicit file name checked.
    func newRecord(for request: DownloadRequest, facts: FileNameClaims.Facts? = nil) async throws -> DownloadRecord {
        var record = DownloadRecord(id: .random(), request: request, createdAt: clock.secondsSince1970())
        try await names.checkExplicit(record, facts: facts)
        record.status = .queued
        // Microseconds, and at least `positionGap` apart within a batch: a move to an index then
        // takes one write, a place between its new neighbours (`directPlace`).
        lastPosition = max(lastPosition + Self.positionGap, clock.microsecondsSince1970())
        record.position = lastPosition
        return record
    }

    func readd(_ existing: DownloadRecord, request: DownloadRequest) async throws -> DownloadRecord {
        if isScheduled(existing.id) { return existing }
        var record = existing
        record.request = request
        if record.status == .completed {
            var size: Int64?
            let path = DestinationFiles.finalPath(record)
            if let path { size = try await BlockingIO.run { DestinationFiles.size(path) } }
            // `-N` asks the server instead (If-Modified-Since): its run ends at once on a 304.
            if let path, let size, record.expectedLength == nil || record.expectedLength == size, !request.timestamping {
                hub.publish(DownloadEvent(id: record.id, kind: .alreadyComplete(path: path)))
                settle(DownloadOutcome(record, alreadyComplete: true))
                return record
            }
            // The finished file is gone or changed: fetch it again.
            record = DownloadRecord(id: record.id, request: request, createdAt: record.createdAt)
            record.position = existing.position
            // `-N` compares with the file this download published, under the name it had.
            if request.timestamping, size != nil { record.fileName = record.fileName ?? existing.fileName }
            try await names.checkExplicit(record)
        }
        if !existing.status.resumesAfterRestart || record.request != existing.request {
            // Left alone otherwise: the record may belong to another process running it right
            // now (the download lock decides), and its checkpoints must not be overwritten.
            record.status = .queued
            record.error = nil
            try await store.save(record)
        }
        enqueue(record)
        return record
    }

    /// Puts back in the queue what was queued or running when the last process stopped.
    public func restore() async throws {
        if fleet != nil {
            startFleet()
            return
        }
        try await serialized {
            for record in try await store.records(status: nil) where record.status.resumesAfterRestart {
                enqueue(record)
            }
        }
    }

    /// Stops a running download at a checkpoint, or takes a queued one out of the queue; it
    /// stays paused, across restarts too, until resumed. Pausing a finished download is a conflict.
    public func pause(_ id: DownloadID) async throws {
        try await pause([id])
    }

    /// Pauses these downloads, all or none: every id is checked and every change made in one
    /// step of the queue, so a download that finishes meanwhile cannot leave half of them
    /// paused. Returns once the running ones have checkpointed (an API answer then shows them
    /// paused). Already paused ones count and stay paused.
    @discardableResult
    public func pause(_ ids: [DownloadID]) async throws -> Int {
        var remote: [DownloadID] = []
        let stopping: [Task<Void, Never>] = try await serialized {
            var records: [DownloadRecord] = []
            for id in ids {
                let record = try await existing(id)
                if record.status.isTerminal, active[id] == nil {
                    throw HaulError(.conflict, "download \(id) is \(record.status.rawValue): there is nothing to pause; nothing was changed")
                }
                records.append(record)
            }
            var stopping: [Task<Void, Never>] = []
            if let fleet {
                // One statement decides for all of them, wherever they run (their hosts hear it
                // at once); those running here stop now.
                let results = try await fleet.pause(ids)
                for (id, result) in results {
                    if let running = active[id] {
                        running.stop.request(.paused)
                        stopping.append(running.task)
                    } else if case .applied(_, let before) = result {
                        if before != .paused { hub.publish(DownloadEvent(id: id, kind: .paused)) }
                    } else {
                        remote.append(id)
                    }
                }
                return stopping
            }
            var paused: [DownloadRecord] = []
            for var record in records {
                if let running = active[record.id] {
                    running.stop.request(.paused)
                    stopping.append(running.task)
                } else if fleet != nil {
                    // Wherever it runs: its host, or at once when none holds it.
                    if record.status == .queued || record.status == .running {
                        remote.append(record.id)
                    }
                } else if record.status != .paused {
                    pending.remove(record.id)
                    record.status = .paused
                    paused.append(record)
                }
            }
            try await store.save(paused)
            for record in paused {
                hub.publish(DownloadEvent(id: record.id, kind: .paused))
                settle(DownloadOutcome(record))
            }
            signalIdleIfNeeded()
            return stopping
        }
        for task in stopping { await task.value }
        for id in remote { _ = try await fleetAwait(.paused, of: id) }
        return ids.count
    }

    /// Puts a paused or failed download back in the queue at its old place; a queued or
    /// running one is left alone. Resuming a completed download is a conflict.
    public func resume(_ id: DownloadID) async throws {
        try await resume([id])
    }

    /// Resumes these downloads, all or none (see `pause(_:)`). Returns how many it was given.
    @discardableResult
    public func resume(_ ids: [DownloadID]) async throws -> Int {
        try await serialized {
            var records: [DownloadRecord] = []
            for id in ids {
                let record = try await existing(id)
                if record.status == .completed {
                    throw HaulError(.conflict, "download \(id) is already complete; nothing was changed")
                }
                records.append(record)
            }
            if fleet != nil {
                // All saved in one transaction or none (one running on another host refuses it).
                var queued: [DownloadRecord] = []
                for var record in records where !record.status.resumesAfterRestart {
                    record.status = .queued
                    record.error = nil
                    queued.append(record)
                }
                try await store.save(queued)
                for record in queued { enqueue(record) }
                return ids.count
            }
            // Queued or running but not scheduled here: its start found it locked by another
            // process; try again.
            for record in records where !isScheduled(record.id) {
                _ = try await readd(record, request: record.request)
            }
            return ids.count
        }
    }

    /// Stops the download and deletes its partial data; the record is kept as removed.
    public func cancel(_ id: DownloadID) async throws {
        try await remove(id, deleteFile: false)
    }

    /// Stops the download if it runs, deletes its `.part`, and the completed file too when
    /// `deleteFile` is true. The queue is not held while a running download stops (a remove
    /// interrupts even a long checksum verification).
    public func remove(_ id: DownloadID, deleteFile: Bool) async throws {
        let stopping: Task<Void, Never>? = try await serialized {
            _ = try await existing(id)
            guard let running = active[id] else { return nil }
            running.stop.request(.removed)
            return running.task
        }
        if stopping == nil, fleet != nil {
            // Not running here: its host removes it, or this one at once when none holds it.
            let record = try await fleetRequest(deleteFile ? .removeWithFile : .remove, for: id)
            await names.release(directory: record.request.directory, name: record.fileName)
            return
        }
        await stopping?.value
        try await serialized { try await removeNow(id, deleteFile: deleteFile, runnerStopped: stopping != nil) }
    }

    private func removeNow(_ id: DownloadID, deleteFile: Bool, runnerStopped: Bool) async throws {
        guard var record = try await store.record(id) else { throw HaulError(.notFound, "no download with id \(id)") }
        if record.status == .removed, !runnerStopped { throw HaulError(.notFound, "no download with id \(id)") }
        if let running = active[id] {
            // Started again while the queue was free: stop it too.
            running.stop.request(.removed)
            await running.task.value
            record = try await store.record(id) ?? record
        }
        let wasQueued = pending.remove(id) != nil
        secrets[id] = nil
        await removeFiles(of: record, deleteFile: deleteFile, status: record.status)
        await names.release(directory: record.request.directory, name: record.fileName)
        let runnerSaidSo = runnerStopped && record.status == .removed
        record.status = .removed
        try await store.save(record)
        if !runnerSaidSo { hub.publish(DownloadEvent(id: id, kind: .removed)) }
        if wasQueued { settle(DownloadOutcome(record)) }
        signalIdleIfNeeded()
    }

    /// Deletes a removed download's `.part`, and its final file when the remove asked for it
    /// (`deleteFile`) and the download had completed (`status`, before the remove): a final
    /// name of a download that never completed may be another file. Through its directory
    /// resolved beneath the roots, on the shared thread pool (the download has no run, hence no
    /// threads of its own). A failure is logged: the record is removed anyway, and a file that
    /// could not be deleted stays where it is.
    nonisolated func removeFiles(of record: DownloadRecord, deleteFile: Bool, status: DownloadStatus) async {
        let (roots, final) = (configuration.downloadRoots, deleteFile && status == .completed)
        do {
            try await BlockingIO.run { try DestinationFiles.remove(record, final: final, roots: roots) }
        } catch {
            configuration.logger.warning("cannot delete the removed download's files", metadata: [
                "id": "\(record.id)", "error": "\(error)"])
        }
    }

    /// Changes the whole manager's rate limit, at once for running downloads too. Nil, or a
    /// rate under one byte per second (aria2's 0), means no limit.
    public func setMaxBytesPerSecond(_ rate: Int64?) {
        globalLimiter.setRate(rate.flatMap(ByteRate.limit))
    }

    /// Changes one download's rate limit, stored and, if it runs, applied at once.
    public func setMaxBytesPerSecond(_ rate: Int64?, for id: DownloadID) async throws {
        try await serialized {
            var record = try await existing(id)
            if let rate, rate <= 0 { throw HaulError(.usage, "a download's rate limit must be positive (got \(rate))") }
            record.request.maxBytesPerSecond = rate
            active[id]?.limiter.setRate(rate.flatMap(ByteRate.limit))
            active[id]?.stop.changeRate(rate)
            try await store.save(record)
            live.update(id) { $0.request.maxBytesPerSecond = rate }
        }
    }

    /// The record: a running download's from memory (as its run last stored it), others' from
    /// the store.
    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        if let running = live.record(id) { return running }
        return try await store.record(id)
    }

    /// Ids in queue order: with that status, or (nil) every status but removed.
    public func ids(status: DownloadStatus?) async throws -> [DownloadID] {
        try await store.ids(status: status)
    }

    /// These records in the order of `ids`; ids removed meanwhile are skipped.
    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        var found: [DownloadID: DownloadRecord] = [:]
        var stored: [DownloadID] = []
        for id in ids {
            if let running = live.record(id) { found[id] = running } else { stored.append(id) }
        }
        if !stored.isEmpty {
            for record in try await store.records(stored) where found[record.id] == nil { found[record.id] = record }
        }
        return ids.compactMap { found[$0] }
    }

    /// The record of a download that exists and was not removed; throws `notFound` otherwise.
    public func download(_ id: DownloadID) async throws -> DownloadRecord {
        try await existing(id)
    }

    public func records(status: DownloadStatus? = nil) async throws -> [DownloadRecord] {
        try await store.records(status: status)
    }

    public var maxConcurrentDownloads: Int { maxConcurrent }

    public func setMaxConcurrentDownloads(_ count: Int) {
        maxConcurrent = max(1, count)
        schedule()
    }

    /// Returns once nothing is running or queued in this process.
    public func waitUntilIdle() async {
        if active.isEmpty && pending.isEmpty { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Checkpoints every running download and stops it with its status left as running, so the
    /// next start resumes it; then releases the store and the HTTP client.
    /// Safe to call more than once and from a cancelled task: every call waits for the one
    /// shutdown, which runs in a task of its own.
    ///
    /// With a `deadline`, stops waiting for downloads after it: one still verifying a large
    /// file keeps its status `running` and is verified again on the next start.
    public func shutdown(deadline: Duration? = nil) async {
        if shutdownTask == nil {
            shutdownTask = Task { await self.stopEverything(deadline: deadline) }
        }
        await shutdownTask?.value
    }

    private func stopEverything(deadline: Duration?) async {
        isShuttingDown = true
        stopFleet()
        // Left queued: the next start picks them up.
        for entry in pending.removeAll() { settle(DownloadOutcome(id: entry.id, status: .queued)) }
        let running = active.values
        for download in running {
            download.stop.request(.running)
        }
        if let deadline {
            // `finished` empties `active` while this sleeps.
            let end = ContinuousClock.now + deadline
            while !active.isEmpty, ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(5)) }
        } else {
            for download in running { await download.task.value }
        }
        // Past the deadline: still running here, resumed by the next start.
        for id in active.keys { settle(DownloadOutcome(id: id, status: .running)) }
        hub.finishAll()
        outcomeHub.finishAll()
        await ownedTransport?.shutdown()
        await closeStore?()
        signalIdleIfNeeded()
    }
}
