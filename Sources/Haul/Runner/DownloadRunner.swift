import HaulCore
import Logging
import NIOConcurrencyHelpers

/// Performs the actions of one download's state machine and reports back: it sends requests,
/// streams bodies into the `.part` file, checkpoints in the durability order of DESIGN rule 2
/// (write, fsync, then store the offsets), verifies and publishes. Every decision is the
/// machine's; the runner is an interpreter.
///
/// Each request and each body runs in a task of its own (a "connection task"); they report to
/// the run's loop through one inbox. The hot path, a chunk of a body, asks the machine (under a
/// lock, no hop) where the bytes go and hands them to the writer. A stop is a message in the
/// inbox: the loop closes the connection tasks and checkpoints in its own task, which nobody
/// cancels.
struct DownloadRunner: Sendable {
    let store: any DownloadStore
    let transport: any HTTPTransport
    let clock: any HaulClock
    let names: FileNameClaims
    let settings: DownloadStateMachine.Settings
    /// The rate limits this download's bytes pass: its own, then the manager's global one.
    let limiters: [RateLimiter]
    /// Where downloads may be written: each download's directory is resolved beneath the one
    /// that contains it, at each use, following no link (`DownloadDirectory`). Nil: every
    /// download's directory is its own root.
    var roots: [String]? = nil
    /// Where progress is noted between checkpoints (nil: not noted; a fleet's runs, whose
    /// `.part` another host may take over).
    var notes: ProgressNotes? = nil
    /// The connection budget per host this download shares with the manager's others (nil: none).
    var budgets: HostBudgets? = nil
    /// Opens the `.part` file (`name` in the directory) for a download over this many
    /// connections; `exclusive` when it must be created by this open. Its blocking work goes to
    /// the run's threads (`io`).
    let makeWriter:
        @Sendable (
            _ directory: DownloadDirectory, _ name: String, _ exclusive: Bool, _ connections: Int,
            _ io: DiskIO
        ) async throws -> any ChunkWriter
    let logger: Logger
    var metrics = EngineMetrics(factory: nil)
    let stop: StopSignal
    let emit: @Sendable (DownloadEvent) -> Void
    /// Where the run's blocking file work goes (the manager's, with its `FileCalls`); nil: lanes
    /// of the run's own with the system's calls.
    var io: DiskIO? = nil
    /// Asked for a new URL when the download's expires (`--refresh-command`); nil: none.
    var refresher: URLRefresher? = nil
    /// Told every record the run has just stored (the manager's `LiveProgress`, which answers
    /// status reads of running downloads from memory).
    var saved: @Sendable (DownloadRecord) -> Void = { _ in }
    /// Told every record the run is about to store, before the store has it (the manager's
    /// `LiveProgress`: a download stored `running` already has the speed it is shown with).
    var saving: @Sendable (DownloadRecord) -> Void = { _ in }
    /// Where a publish makes its new name durable together with the others published into the
    /// same directory meanwhile (the manager's, shared by its runs; by default the run's own).
    var directorySyncs = DirectorySyncs()
    /// Told once every byte is in and every connection has closed, with the bytes its finish goes
    /// through (the manager's queue gives the slot of a short finish to the next download while
    /// this one verifies, publishes and saves).
    var transferEnded: @Sendable (Int64) -> Void = { _ in }
    /// Files kept by digest (`--content-store`): a download that names a digest the store has
    /// links it instead of fetching, and one that completes puts its file there. Nil: none.
    var contentStore: ContentStore? = nil
    /// The file of a twin (a download of the same digest) that completed while this one waited
    /// for it: checked and linked instead of fetched (the queue's `copy`). Nil: none.
    var twinFile: String? = nil
    /// The gate of a run started without a slot (`SlotProbes`): a response that needs one waits
    /// there, unread, until the queue grants it. Nil: the run holds a slot.
    var slotGate: SlotGate? = nil

    /// Runs until the download completes, fails or is stopped; returns the record as persisted.
    func run(_ record: DownloadRecord) async -> DownloadRecord {
        await runCounting(record).record
    }

    /// `run`, and what the run cost on the wire (requests, connections, TLS handshakes).
    func runCounting(_ record: DownloadRecord) async -> (
        record: DownloadRecord, transfer: TransferStats, notModified: Bool
    ) {
        let session = RunSession(runner: self, record: record)
        let ended = await session.run()
        return (ended, session.transfer, session.notModified)
    }

    /// What the `.part` and the final file look like before a start (nothing, in a directory
    /// that does not exist yet). Blocks: on a file thread.
    static func localFiles(_ record: DownloadRecord, in directory: DownloadDirectory?)
        -> DownloadStateMachine.LocalFiles
    {
        guard let directory, let final = record.fileName, let part = DestinationFiles.partName(record) else {
            return .init(partSize: nil, published: false)
        }
        let published =
            record.expectedLength.map { directory.wasPublished(part: part, final: final, length: $0) } ?? false
        let finalModified = record.request.timestamping ? directory.modificationTime(of: final) : nil
        return .init(partSize: directory.size(of: part), published: published, finalModified: finalModified)
    }
}

/// What connection tasks, timers and the stop signal tell the run's loop.
enum RunInput: Sendable {
    typealias ConnectionID = DownloadStateMachine.ConnectionID
    case response(ConnectionID, ResponseHead, any ResponseBodyStream)
    case requestFailed(ConnectionID, HaulError)
    case bodyEnded(ConnectionID)
    case bodyFailed(ConnectionID, HaulError)
    case overlapMismatch(ConnectionID)
    /// A connection told to close had no task running: it has stopped.
    case closed(ConnectionID)
    case diskFailed(ConnectionID, HaulError)
    case timer(DownloadStateMachine.Timer)
    case tick
    /// A body task handed over the bytes that made a progress note due.
    case noteDue
    case stop(DownloadStatus)
    /// The manager heard that another host holds the download now.
    case leaseLost
    case rateChanged(Int64?)
    case headersChanged(HTTPHeaderList)
    /// The host's connection budget lets this download have so many connections now.
    case allowance(Int)
    case verified(Verifier.Verdict)
    case urlRefreshed(Result<RemoteURL, HaulError>)
    /// A periodic checkpoint's fsync returned (or failed).
    case synced(epoch: Int, Result<[Int64: Int64], HaulError>)
}

/// The mutable part of one run; lives in the run's task only.
final class RunSession {
    typealias ConnectionID = DownloadStateMachine.ConnectionID
    typealias Action = DownloadStateMachine.Action

    let runner: DownloadRunner
    let machine: NIOLockedValueBox<DownloadStateMachine>
    let inbox: AsyncStream<RunInput>
    let post: AsyncStream<RunInput>.Continuation
    let limiters: [RateLimiter]
    var tasks: [ConnectionID: Task<Void, Never>] = [:]
    var timers: [DownloadStateMachine.Timer: Task<Void, Never>] = [:]
    var verifyTask: Task<Void, Never>?
    /// The refresh command asked for a new URL (`.refreshURL`).
    var refreshTask: Task<Void, Never>?
    /// A periodic checkpoint runs beside the loop, so a slow fsync never delays a stop or the
    /// opening of connections.
    var checkpointTask: Task<Void, Never>?
    var bodies: [ConnectionID: any ResponseBodyStream] = [:]
    /// The run's own lanes for its blocking file work: no file call runs on the cooperative
    /// pool, and this download's slow disk holds back no other.
    let io: DiskIO
    var writer: (any ChunkWriter)?
    /// The download's directory, resolved beneath its root when this run first needs it.
    var directory: DownloadDirectory?
    /// Whether a `.part` was there when the run started: if not, the writer must create it.
    var partExisted = false
    var speed = SpeedMeter()
    var lastTick: Double
    var finished = false
    /// The host whose connection budget this run shares, and the connections it last reported.
    let host: String
    var connectionsReported = 0
    /// Requests sent and the connections their answers came over.
    var transfer = TransferStats()
    /// `-N` got a 304: the run ends complete without a byte.
    var notModified = false

    init(runner: DownloadRunner, record: DownloadRecord) {
        self.runner = runner
        self.machine = NIOLockedValueBox(DownloadStateMachine(record: record, settings: runner.settings))
        (inbox, post) = AsyncStream.makeStream(of: RunInput.self)
        self.limiters = runner.limiters
        self.lastTick = runner.clock.seconds()
        self.host = ConnectionBudget.host(of: record.request.url)
        self.io = runner.io ?? DiskIO()
    }

    var id: DownloadID { machine.withLockedValue { $0.record.id } }
    var record: DownloadRecord { machine.withLockedValue { $0.record } }
    var jitter: Double { Double.random(in: 0..<1) }

    func run() async -> DownloadRecord {
        let post = self.post
        runner.stop.attach { status in post.yield(.stop(status)) }
        runner.stop.attachLeaseLost { post.yield(.leaseLost) }
        runner.stop.attachRate { rate in post.yield(.rateChanged(rate)) }
        runner.stop.attachHeaders { headers in post.yield(.headersChanged(headers)) }
        // Speeds, progress and checkpoint decisions, also while every connection waits, on the
        // injected clock (a test's manual clock ticks when the test advances it).
        let interval = Duration.milliseconds(Int64(max(runner.settings.tickInterval, 0.001) * 1000))
        let clock = runner.clock
        let ticker = Task {
            while !Task.isCancelled {
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    return // cancelled: the run is over
                }
                post.yield(.tick)
            }
        }
        defer { ticker.cancel() }
        if let budgets = runner.budgets {
            // With no connection to spare on its host, the machine waits for one before its first
            // request (`setAllowance`): a download never fails for getting fewer than it asked for.
            // A download that finds its count wants the ceiling; without a budget it may grow
            // only while it is its host's only download (`ConnectionBudget.Member.start`).
            let request = record.request
            let grows = request.growsConnections
            let allowance = budgets.join(
                id, host: host, wants: grows ? max(request.connections, ConnectionGrowth.ceiling) : request.connections,
                growsFrom: grows ? request.connections : nil
            ) { post.yield(.allowance($0)) }
            _ = machine.withLockedValue { $0.setAllowance(allowance) }
        }
        let now = runner.clock.seconds()
        do {
            let (record, roots) = (record, runner.roots)
            let (resolved, found) = try await io.run {
                let directory = try DownloadDirectory.resolve(record.request.directory, roots: roots, create: false)
                return (directory, DownloadRunner.localFiles(record, in: directory))
            }
            directory = resolved
            var local = found
            partExisted = local.partSize != nil
            local.noted = await notedProgress()
            if !local.published, local.noted.isEmpty, machine.withLockedValue(\.canCopy),
                let copied = await copyByDigest()
            {
                (local.copied, local.partSize, partExisted) = (copied, copied, true)
            }
            await execute(machine.withLockedValue { $0.start(local, now: now) })
        } catch {
            // The directory cannot be used (a link where a directory was, outside the roots):
            // the download fails before any request, its stored progress untouched.
            await execute(machine.withLockedValue { $0.diskFailed(HaulError.from(error, otherwise: .fileSystem)) })
        }
        if !finished {
            for await input in inbox {
                await execute(handle(input))
                if finished { break }
            }
        }
        // Nothing may write after the file is closed.
        for task in tasks.values { task.cancel() }
        for task in timers.values { task.cancel() }
        verifyTask?.cancel()
        refreshTask?.cancel()
        for task in tasks.values { await task.value }
        await verifyTask?.value
        await refreshTask?.value
        await checkpointTask?.value
        bodies = [:]
        await closeWriter()
        // Every way a run ends checkpoints what it keeps (or leaves the file to another host):
        // its note has nothing more to tell.
        await removeNote()
        runner.budgets?.leave(id, host: host)
        post.finish()
        return machine.withLockedValue { $0.persistentRecord }
    }
}
