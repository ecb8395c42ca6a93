import CoreMetrics
import HaulCore
import Logging
import NIOConcurrencyHelpers

/// The public face of the engine: a persistent queue of downloads, at most
/// `maxConcurrentDownloads` running at once, each driven by its own state machine.
///
/// ```swift
/// // withManager(configuration:) is HaulStore's: the queue in SQLite under the directory, the
/// // manager running while the closure runs.
/// try await DownloadManager.withManager(configuration: .init(stateDirectory: dir)) { manager in
///     let record = try await manager.add(DownloadRequest(url: try RemoteURL(text), destination: .directory(dir)))
///     return try await manager.outcome(of: record.id)  // never misses the end
/// }
/// ```
///
/// `events()` carries progress for display and may drop old events when its reader falls
/// behind; `outcomes()` and `outcome(of:)` never drop anything.
public actor DownloadManager {
    /// What the manager holds to carry out the queue's actions on one run: its task, the
    /// signal that stops it, and its own rate limit (changeable while it runs). Which run is
    /// current, and what it was asked, is the queue's (`DownloadQueue.Run`).
    struct RunHandle {
        /// Finished once the run has returned and its end is settled.
        var ended: Completion
        var stop: StopSignal
        var limiter: RateLimiter
        /// A probe's gate (`SlotProbes`), opened when the queue grants it a slot; nil: it holds one.
        var gate: SlotGate? = nil
    }

    /// The settings the manager was made with. Limits changed since by its setters are not
    /// written back here (`maxConcurrentDownloads` reads the one in force).
    public let configuration: Configuration
    let store: any DownloadStore
    /// The shared store when this manager is one host of a fleet: the queue is then the
    /// database's, claimed with leases (see `DownloadManager+Fleet.swift`).
    let fleet: (any SharedQueueStore)?
    var fleetState = FleetState()
    let transport: any HTTPTransport
    /// The transport this manager made, and shuts down when its task group ends.
    let ownedTransport: AsyncHTTPTransport?
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
    /// One fsync of a directory for the files its runs publish into it meanwhile.
    let directorySyncs = DirectorySyncs()
    /// The latest progress of every running download, for listings and the summary.
    nonisolated let live = LiveProgress()
    /// The queue's decisions (`HaulCore/Queue/DownloadQueue.swift`): every download it knows
    /// by id (waiting with its place, running with its generation, suspended), with what its
    /// request gave; the slots and the waiting list (ids and places only; a record stays in the
    /// store until its download starts, so ten thousand queued cost about 100 bytes each).
    var queue: DownloadQueue
    /// The runs of this process, by download: the handles the queue's actions need.
    var handles: [DownloadID: RunHandle] = [:]
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    var locks: DownloadLocks?
    /// What `run()` runs and where it stands (`DownloadManager+Service.swift`).
    var service = ServiceState()
    /// What `run()`'s loop reads: callers' changes and adds, runs' transfer ends and ends.
    let inbox = Inbox<Message>()
    /// Hosts already told to the queue as answering over HTTP/2 (`SlotGate`'s report, posted once
    /// per host).
    let http2Hosts = NIOLockedValueBox<Set<String>>([])
    /// Work for `run()`'s task group: runs, a fleet host's loop, another host's remove, the shutdown.
    let children = AsyncStream.makeStream(of: Work.self)
    /// Finished once no run is left, after the last one's outcome is settled: what a shutdown
    /// with a deadline waits on (`signalIdleIfNeeded`).
    var runsEnded: AsyncStream<Void>.Continuation?

    /// Where the queue lives, chosen by whoever builds the manager (as AsyncHTTPClient's pool
    /// holds `http1` or `http2`): this process's store, or a fleet's shared database, whose
    /// queue is claimed with leases (`DownloadManager+Fleet.swift`).
    public enum Backend: Sendable {
        /// A queue of this process alone, kept in `store` (SQLite, or in memory).
        case local(any DownloadStore)
        /// One host of a fleet: the queue is the shared database's, its downloads claimed with
        /// leases.
        case fleet(any SharedQueueStore)

        var store: any DownloadStore {
            switch self {
            case .local(let store): store
            case .fleet(let fleet): fleet
            }
        }
    }

    /// A queue of this process on `store`, with AsyncHTTPClient; the state directory keeps the
    /// download locks. The manager owns the store: `shutdown()` calls `closeStore` (given: the
    /// SQLite store's, see HaulStore's `DownloadManager(configuration:)`).
    public init(
        configuration: Configuration, store: any DownloadStore,
        closeStore: (@Sendable () async -> Void)? = nil
    ) async throws {
        try await self.init(configuration: configuration, backend: .local(store), closeStore: closeStore)
    }

    /// One host of a fleet on its shared store, which `shutdown()` closes.
    public init(configuration: Configuration, fleet: any SharedQueueStore) async throws {
        try await self.init(configuration: configuration, backend: .fleet(fleet), closeStore: { await fleet.close() })
    }

    private init(configuration: Configuration, backend: Backend, closeStore: (@Sendable () async -> Void)?) async throws
    {
        try Self.prepareStateDirectory(configuration.stateDirectory)
        let transport = AsyncHTTPTransport(configuration: configuration.http, logger: configuration.logger)
        self.init(
            configuration: configuration, backend: backend, transport: transport,
            clock: ClockAdapter(ContinuousClock()),
            ownedTransport: transport, closeStore: closeStore)
    }

    /// Creates the state directory if needed, private (mode 700) when new.
    public static func prepareStateDirectory(_ path: String) throws {
        do {
            // The store keeps request headers (cookies, tokens): a new state directory is private.
            try Directories.create(path, isPrivate: true)
        } catch {
            throw HaulError(error.code, "cannot use state directory \(path): \(error.message)")
        }
    }

    /// Injects every dependency: tests use their own store, transport or clock. The state
    /// directory must exist (`prepareStateDirectory(_:)`), and the transport is the caller's
    /// to shut down, after the manager.
    public init(
        configuration: Configuration, store: any DownloadStore, transport: any HTTPTransport, clock: any HaulClock
    ) {
        self.init(
            configuration: configuration, backend: .local(store), transport: transport, clock: clock,
            ownedTransport: nil, closeStore: nil)
    }

    /// One host of a fleet with every dependency injected, as the local one above: tests drive
    /// its renewals and its waits for other hosts with their own clock. The fleet's store and the
    /// transport are the caller's to close, after the manager.
    public init(
        configuration: Configuration, fleet: any SharedQueueStore, transport: any HTTPTransport, clock: any HaulClock
    ) {
        self.init(
            configuration: configuration, backend: .fleet(fleet), transport: transport, clock: clock,
            ownedTransport: nil, closeStore: nil)
    }

    private init(
        configuration: Configuration, backend: Backend, transport: any HTTPTransport, clock: any HaulClock,
        ownedTransport: AsyncHTTPTransport?, closeStore: (@Sendable () async -> Void)?
    ) {
        self.configuration = configuration
        let store = backend.store
        self.store = store
        switch backend {
        case .local:
            self.fleet = nil
            self.queue = .local(
                limit: configuration.maxConcurrentDownloads,
                http1Probes: configuration.sendsPastLimit
                    ? configuration.maxConnectionsPerHost ?? SlotProbes.http1Default : 0)
        case .fleet(let fleet):
            self.fleet = fleet
            self.queue = .fleet(
                limit: configuration.maxConcurrentDownloads,
                renewInterval: configuration.fleetRenewInterval ?? .seconds(1), leaseTimeout: fleet.leaseTimeout)
        }
        self.transport = transport
        self.clock = clock
        self.names = FileNameClaims(store: store)
        self.metrics = EngineMetrics(factory: configuration.metricsFactory)
        let boot = configuration.bootID ?? ProgressNotes.systemBootID()
        self.notes =
            queue.trustsProgressNotes && boot != nil
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
        try await store.existing(id, removedToo: true)
    }

    // MARK: Queue

    /// Adds a download, or picks up the existing one for the same URL and destination: a
    /// paused, failed or interrupted one resumes from its checkpoint; a running or queued one
    /// is not started twice; a completed one whose file is intact is reported complete.
    @discardableResult
    public func add(_ request: DownloadRequest) async throws -> DownloadRecord {
        try await add([request])[0]
    }

    /// Puts back in the queue what was queued or running when the last process stopped.
    /// A fleet host starts claiming from the database instead (`DownloadQueue.restore`).
    public func restore() async throws {
        _ = try await inTurn { [self] in try await performCalling(queue.restore()) }
    }

    /// Returns once nothing is running or queued in this process.
    public func waitUntilIdle() async {
        if queue.isIdle { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Checkpoints every running download and stops it with its status left as running, so the
    /// next start resumes it; then releases the store and the HTTP client.
    /// Safe to call more than once and from a cancelled task: every call waits for the one
    /// shutdown, which runs in the manager's task group (`run()`), and ends it.
    ///
    /// With a `deadline`, stops waiting for downloads after it: one still verifying a large
    /// file keeps its status `running` and is verified again on the next start.
    public func shutdown(deadline: Duration? = nil) async {
        switch service.lifecycle.shutdown() {
        case .stopHere:
            // Never run, or the loop was cancelled: what is left to stop and close is stopped
            // here, and nothing runs it after.
            await stopEverything(deadline: deadline)
        case .stopInLoop:
            // A child of the loop's group. Should the group be cancelled before it runs, the
            // loop's end stops everything instead (`loopEnded`).
            spawn { await self.stopEverything(deadline: deadline) }
        case .wait:
            break
        }
        await service.stopped.wait()
    }

    /// The shutdown's work, done once: by the shutdown's job in the task group, or by the
    /// group's end when it ended without one (cancelled). Ends with the transport this manager
    /// made and the store it owns released, and the shutdown finished.
    func stopEverything(deadline: Duration?) async {
        guard service.lifecycle.beginStopping() else { return }
        stopFleet()
        let running = handles.values
        // What waits is left queued and every run stops as running: the next start picks them up.
        await perform(queue.shutdown())
        if !service.lifecycle.waitsForRuns {
            // Every run was a child of the group, which has ended: none is left to wait for (a
            // run handed to it after it was cancelled never started, and never ends).
        } else if let deadline {
            // The runs' ends (each once its outcome is settled) race the deadline.
            let (ended, signal) = AsyncStream.makeStream(of: Void.self)
            runsEnded = signal
            if handles.isEmpty { signal.finish() }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in ended {} }
                // On the injected clock (a test's manual clock: the test advances it past the
                // deadline). Ends early only when the race is over (cancelled below): nothing to lose.
                group.addTask { [clock] in try? await clock.sleep(for: deadline) }
                await group.next()
                group.cancelAll()
            }
            runsEnded = nil
        } else {
            for download in running { await download.ended.wait() }
        }
        // Past the deadline: still running here, resumed by the next start.
        await perform(queue.abandonedAtDeadline())
        hub.finishAll()
        outcomeHub.finishAll()
        await ownedTransport?.shutdown()
        await closeStore?()
        signalIdleIfNeeded()
        endLoop()
        service.stopped.finish()
    }
}
