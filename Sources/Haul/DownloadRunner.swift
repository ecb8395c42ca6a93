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
    let makeWriter: @Sendable (_ directory: DownloadDirectory, _ name: String, _ exclusive: Bool, _ connections: Int,
                               _ io: DiskIO) async throws -> any ChunkWriter
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

    /// Runs until the download completes, fails or is stopped; returns the record as persisted.
    func run(_ record: DownloadRecord) async -> DownloadRecord {
        await runCounting(record).record
    }

    /// `run`, and what the run cost on the wire (requests, connections, TLS handshakes).
    func runCounting(_ record: DownloadRecord) async -> (record: DownloadRecord, transfer: TransferStats, notModified: Bool) {
        let session = RunSession(runner: self, record: record)
        let ended = await session.run()
        return (ended, session.transfer, session.notModified)
    }

    /// What the `.part` and the final file look like before a start (nothing, in a directory
    /// that does not exist yet). Blocks: on a file thread.
    static func localFiles(_ record: DownloadRecord, in directory: DownloadDirectory?) -> DownloadStateMachine.LocalFiles {
        guard let directory, let final = record.fileName, let part = DestinationFiles.partName(record) else {
            return .init(partSize: nil, published: false)
        }
        let published = record.expectedLength.map { directory.wasPublished(part: part, final: final, length: $0) } ?? false
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
    case diskFailed(ConnectionID, HaulError)
    case timer(DownloadStateMachine.Timer)
    case tick
    /// A body task handed over the bytes that made a progress note due.
    case noteDue
    case stop(DownloadStatus)
    /// The manager heard that another host holds the download now.
    case leaseLost
    case rateChanged(Int64?)
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
        // Speeds, progress and checkpoint decisions, also while every connection waits. Real
        // time, not the injected clock: a test's manual clock counts only the machine's timers.
        let interval = Duration.milliseconds(Int64(max(runner.settings.tickInterval, 0.001) * 1000))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                post.yield(.tick)
            }
        }
        defer { ticker.cancel() }
        if let budgets = runner.budgets {
            // With no connection to spare on its host, the machine waits for one before its first
            // request (`setAllowance`): a download never fails for getting fewer than it asked for.
            let allowance = budgets.join(id, host: host, wants: record.request.connections) { post.yield(.allowance($0)) }
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
            await execute(machine.withLockedValue { $0.start(local, now: now) })
        } catch {
            // The directory cannot be used (a link where a directory was, outside the roots):
            // the download fails before any request, its stored progress untouched.
            await execute(machine.withLockedValue { $0.diskFailed(diskError(error)) })
        }
        if !finished {
            for await input in inbox {
                await execute(await handle(input))
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

    // MARK: Inputs

    func handle(_ input: RunInput) async -> [Action] {
        let jitter = self.jitter
        switch input {
        case .response(let connection, let head, let body):
            tasks[connection] = nil
            bodies[connection] = body
            transfer.answered(over: head.connections)
            let now = WallClock.secondsSince1970()
            return machine.withLockedValue { $0.responseReceived(connection, head, nowSecondsSince1970: now, jitter: jitter) }
        case .requestFailed(let connection, let error), .bodyFailed(let connection, let error):
            tasks[connection] = nil
            if error.code != .interrupted {
                runner.logger.debug("connection failed", metadata: ["id": "\(id)", "connection": "\(connection)", "error": "\(error)"])
            }
            return machine.withLockedValue { $0.transferFailed(connection, error, jitter: jitter) }
        case .bodyEnded(let connection):
            tasks[connection] = nil
            return machine.withLockedValue { $0.bodyEnded(connection, jitter: jitter) }
        case .overlapMismatch(let connection):
            tasks[connection] = nil
            return machine.withLockedValue { $0.overlapMismatch(connection) }
        case .diskFailed(let connection, let error):
            tasks[connection] = nil
            runner.logger.error("cannot write the .part file", metadata: ["id": "\(id)", "error": "\(error)"])
            return machine.withLockedValue { $0.diskFailed(error, connection: connection) }
        case .timer(let timer):
            timers[timer] = nil
            return machine.withLockedValue { $0.timerFired(timer) }
        case .tick:
            let now = runner.clock.seconds()
            let elapsed = now - lastTick
            lastTick = now
            let (actions, completed, total, connections, downloading) = machine.withLockedValue { machine in
                (machine.tick(now: now, elapsed: elapsed), machine.completedLength, machine.expectedLength,
                 machine.activeConnections, machine.state == .downloading)
            }
            guard downloading else { return actions }
            speed.record(bytes: completed, at: now)
            runner.emit(DownloadEvent(id: id, kind: .progress(Progress(
                completed: completed, total: total, bytesPerSecond: speed.bytesPerSecond, connections: connections))))
            var others: [Action] = []
            for action in actions {
                guard case .checkpoint(let epoch) = action else {
                    others.append(action)
                    continue
                }
                await startBackgroundCheckpoint(epoch: epoch)
            }
            return others
        case .noteDue:
            return machine.withLockedValue { $0.noteRequested() }
        case .synced(let epoch, let result):
            checkpointTask = nil
            switch result {
            case .success(let written):
                return machine.withLockedValue { $0.synced(epoch: epoch, written: written) }
            case .failure(let error):
                runner.logger.error("checkpoint failed", metadata: ["id": "\(id)", "error": "\(error)"])
                return machine.withLockedValue { $0.diskFailed(error) }
            }
        case .stop(let status):
            return machine.withLockedValue { $0.stopRequested(status: status) }
        case .leaseLost:
            return machine.withLockedValue { $0.leaseLost() }
        case .rateChanged(let rate):
            return machine.withLockedValue { $0.setRateLimit(rate) }
        case .allowance(let allowance):
            return machine.withLockedValue { $0.setAllowance(allowance) }
        case .verified(let verdict):
            verifyTask = nil
            return machine.withLockedValue { $0.verified(verdict.error, badPieces: verdict.badPieces) }
        case .urlRefreshed(let result):
            refreshTask = nil
            return machine.withLockedValue { $0.urlRefreshed(result) }
        }
    }

    // MARK: Actions

    func execute(_ actions: [Action]) async {
        for action in actions where !finished {
            await perform(action)
        }
        // A body the machine did not take is dropped, which closes its connection.
        for connection in bodies.keys where tasks[connection] == nil { bodies[connection] = nil }
        reportConnections()
    }

    /// Tells the host's budget when this download has let connections go.
    func reportConnections() {
        guard let budgets = runner.budgets else { return }
        let count = machine.withLockedValue { $0.connectionCount }
        defer { connectionsReported = count }
        if count < connectionsReported { budgets.using(id, host: host, count: count) }
    }

    func perform(_ action: Action) async {
        switch action {
        case .request(let connection, let plan):
            transfer.requestSent()
            startRequest(connection, plan)
        case .receive(let connection):
            await startBody(connection)
        case .close(let connection):
            bodies[connection] = nil
            if let task = tasks[connection] {
                task.cancel()
            } else {
                // Already done, its report handled: this is its last word.
                post.yield(.requestFailed(connection, HaulError(.interrupted, "closed")))
            }
        case .schedule(let timer, let delay):
            timers[timer]?.cancel()
            let (clock, post) = (runner.clock, post)
            timers[timer] = Task {
                do {
                    try await clock.sleep(for: delay)
                    post.yield(.timer(timer))
                } catch {}
            }
        case .cancelTimer(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        case .nameFile(let contentDisposition, let finalURL):
            await nameFile(contentDisposition: contentDisposition, finalURL: finalURL)
        case .persist:
            await persist()
        case .truncate(let length):
            do {
                // A note about the bytes being cut must not outlive them.
                if let notes = runner.notes {
                    let id = id
                    try await io.run { try notes.remove(id) }
                }
                try await openWriter()?.truncate(to: length)
            } catch {
                await execute(machine.withLockedValue { $0.diskFailed(diskError(error)) })
            }
        case .checkpoint(let epoch):
            await checkpoint(epoch: epoch)
        case .noteProgress:
            await noteProgress()
        case .verify(let target):
            await startVerify(target)
        case .cancelVerify:
            verifyTask?.cancel()
        case .publish(let target):
            await publish(target)
        case .replaceFinal:
            await publish(.part, replacing: true)
        case .setModificationTime(let seconds):
            await setModificationTime(seconds)
        case .notify(let notice):
            notify(notice)
        case .discardWrites:
            await checkpointTask?.value
            do {
                try await writer?.discard()
            } catch {
                runner.logger.warning("cannot close the .part given up", metadata: ["id": "\(id)", "error": "\(error)"])
            }
        case .refreshURL:
            let (refresher, record, post) = (runner.refresher, record, post)
            refreshTask = Task {
                let result = await refresher?.refresh(record) ?? .failure(HaulError(.internal, "no refresh command"))
                post.yield(.urlRefreshed(result))
            }
        case .finish:
            finished = true
            announceEnd()
        }
    }

    func startRequest(_ connection: ConnectionID, _ plan: RequestPlan) {
        let (transport, post, url) = (runner.transport, post, plan.url.absoluteString)
        runner.logger.trace("request", metadata: ["connection": "\(connection)", "range": "\(plan.range?.description ?? "all")"])
        tasks[connection] = Task {
            do {
                let (head, body) = try await transport.send(plan)
                post.yield(.response(connection, head, body))
            } catch {
                post.yield(.requestFailed(connection, AsyncHTTPTransport.classify(error, url: url)))
            }
        }
    }

    func startBody(_ connection: ConnectionID) async {
        guard let body = bodies.removeValue(forKey: connection) else {
            post.yield(.bodyFailed(connection, HaulError(.internal, "no body to read")))
            return
        }
        let writer: any ChunkWriter
        do {
            guard let opened = try await openWriter() else { throw HaulError(.internal, "no file name before the body") }
            writer = opened
        } catch {
            post.yield(.diskFailed(connection, diskError(error)))
            return
        }
        let (machine, post, limiters, url) = (machine, post, limiters, record.request.url.absoluteString)
        tasks[connection] = Task {
            do {
                while let chunk = try await body.next() {
                    let accepted = machine.withLockedValue { $0.received(connection, count: chunk.count) }
                    var cursor = accepted.skip
                    if accepted.compare > 0 {
                        let disk = try await writer.read(at: accepted.compareOffset, count: accepted.compare)
                        let same = chunk.withUnsafeBytes { bytes in
                            disk.count == accepted.compare && bytes[cursor..<(cursor + accepted.compare)].elementsEqual(disk)
                        }
                        guard same else {
                            post.yield(.overlapMismatch(connection))
                            return
                        }
                        cursor += accepted.compare
                    }
                    if accepted.keep > 0 {
                        let slice = cursor == 0 && accepted.keep == chunk.count ? chunk : chunk.slice(cursor..<(cursor + accepted.keep))
                        do {
                            try await writer.write(slice, at: accepted.writeOffset, part: accepted.part)
                        } catch {
                            post.yield(.diskFailed(connection, (error as? HaulError) ?? HaulError(.fileSystem, "\(error)")))
                            return
                        }
                    }
                    if accepted.noteDue { post.yield(.noteDue) }
                    if accepted.partComplete { break }
                    // Backpressure: the next read waits for the rate limits.
                    try await RateLimiter.acquire(chunk.count, from: limiters)
                }
                post.yield(.bodyEnded(connection))
            } catch {
                post.yield(.bodyFailed(connection, AsyncHTTPTransport.classify(error, url: url)))
            }
        }
    }

    /// Opens the `.part` once the download has its name, in its directory resolved beneath
    /// its root (created if missing).
    func openWriter() async throws -> (any ChunkWriter)? {
        if let writer { return writer }
        let record = self.record
        guard let part = DestinationFiles.partName(record) else { return nil }
        let opened = try await runner.makeWriter(try await resolvedDirectory(), part, !partExisted, record.request.connections, io)
        writer = opened
        return opened
    }

    /// Writes what is left and closes the `.part` (after every connection and checkpoint ended).
    func closeWriter() async {
        guard let writer else { return }
        self.writer = nil
        do {
            try await writer.close()
        } catch {
            runner.logger.warning("cannot close the .part", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    func resolvedDirectory() async throws -> DownloadDirectory {
        if let directory { return directory }
        let (path, roots) = (record.request.directory, runner.roots)
        guard let resolved = try await io.run({ try DownloadDirectory.resolve(path, roots: roots, create: true) }) else {
            throw HaulError(.fileSystem, "cannot create \(path)")
        }
        directory = resolved
        return resolved
    }

    /// Claims a name (in this process, on disk and in the store) and creates its `.part` at
    /// once with `O_EXCL`: a `.part` another download or program made since the claim looked
    /// gives the next name, so the record always names the file this run created.
    func nameFile(contentDisposition: String?, finalURL: String) async {
        let record = self.record
        guard record.fileName == nil else { return }
        do {
            let url = (try? RemoteURL(finalURL)) ?? record.request.url
            for _ in 0..<Self.nameAttempts {
                let name = try await runner.names.claim(for: record, contentDisposition: contentDisposition, finalURL: url)
                machine.withLockedValue { $0.setFileName(name) }
                do {
                    _ = try await openWriter()
                    return
                } catch let error as HaulError where error.code == .fileExists && !partExisted {
                    await runner.names.release(directory: record.request.directory, name: name)
                    runner.logger.notice("the name was taken on disk meanwhile; trying the next", metadata: ["id": "\(id)", "name": "\(name)"])
                }
            }
            throw HaulError(.fileExists, "no free file name in \(record.request.directory): every one tried appeared while it was claimed")
        } catch let error as HaulError where error.code == .leaseLost {
            await execute(machine.withLockedValue { $0.leaseLost() })
        } catch {
            await execute(machine.withLockedValue { $0.diskFailed(diskError(error)) })
        }
    }

    /// How many names a run tries when each is taken on disk between its claim and its `.part`.
    static let nameAttempts = 100

    func persist() async {
        let record = machine.withLockedValue { $0.persistentRecord }
        do {
            try await runner.metrics.time(runner.metrics.store) { try await runner.store.save(record) }
            runner.saved(record)
        } catch let error as HaulError where error.code == .leaseLost {
            runner.logger.warning("another host took the download over", metadata: ["id": "\(record.id)"])
            await execute(machine.withLockedValue { $0.leaseLost() })
        } catch let error as HaulError where error.code == .storeUnavailable {
            runner.logger.warning("the store cannot be reached: stopping at this checkpoint", metadata: ["id": "\(record.id)"])
            await execute(machine.withLockedValue { $0.storeUnavailable() })
        } catch {
            // Not fatal: the download goes on and the next checkpoint tries again.
            runner.logger.warning("cannot save the checkpoint", metadata: ["id": "\(record.id)", "error": "\(error)"])
        }
    }

    /// Write, fsync, then store the offsets: the store never runs ahead of the disk.
    func checkpoint(epoch: Int) async {
        guard let writer = await openWriterForCheckpoint() else { return }
        do {
            let written = try await runner.metrics.time(runner.metrics.sync) { try await writer.checkpoint() }
            await execute(machine.withLockedValue { $0.synced(epoch: epoch, written: written) })
        } catch {
            runner.logger.error("checkpoint failed", metadata: ["id": "\(id)", "error": "\(error)"])
            await execute(machine.withLockedValue { $0.diskFailed(diskError(error)) })
        }
    }

    /// Notes where each part's written bytes end, without fsync (`.noteProgress`). A failed
    /// write of the `.part` is the machine's to hear; a note that cannot be written is only
    /// logged (the next checkpoint still comes).
    func noteProgress() async {
        guard let notes = runner.notes, let boot = notes.boot, let writer, let directory,
              let part = DestinationFiles.partName(record) else { return }
        let written: [Int64: Int64]
        do {
            written = try await writer.flush()
        } catch {
            await execute(machine.withLockedValue { $0.diskFailed(diskError(error)) })
            return
        }
        let (id, record) = (id, record)
        do {
            try await io.run {
                guard let file = directory.status(of: part) else { return }
                try notes.write(id, tag: .init(boot: boot, part: file, record: record), written: written)
            }
        } catch {
            runner.logger.warning("cannot note progress", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// What a run of this download killed on this boot noted about this very `.part` and
    /// entity, once the `.part` is synced (so the store may claim those bytes); empty otherwise.
    func notedProgress() async -> [Int64: Int64] {
        let record = self.record
        guard let notes = runner.notes, let boot = notes.boot, let directory,
              let part = DestinationFiles.partName(record) else { return [:] }
        do {
            return try await io.run {
                guard let file = directory.status(of: part) else { return [:] }
                let noted = notes.read(record.id, tag: .init(boot: boot, part: file, record: record))
                guard !noted.isEmpty else { return [:] }
                try directory.syncFile(part)
                return noted
            }
        } catch {
            runner.logger.warning("noted progress not used: cannot sync the .part", metadata: ["id": "\(id)", "error": "\(error)"])
            return [:]
        }
    }

    func removeNote() async {
        guard let notes = runner.notes else { return }
        let id = id
        do {
            try await io.run { try notes.remove(id) }
        } catch {
            runner.logger.warning("cannot remove the progress note", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// The writer a checkpoint syncs; nil (logged) when the `.part` cannot be opened: then no
    /// byte was written through it, and the stored offsets stay as they are.
    func openWriterForCheckpoint() async -> (any ChunkWriter)? {
        do {
            return try await openWriter()
        } catch {
            runner.logger.warning("checkpoint skipped: cannot open the .part", metadata: ["id": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    func startBackgroundCheckpoint(epoch: Int) async {
        guard checkpointTask == nil, let writer = await openWriterForCheckpoint() else { return }
        let (post, metrics) = (self.post, runner.metrics)
        checkpointTask = Task {
            do {
                post.yield(.synced(epoch: epoch, .success(try await metrics.time(metrics.sync) { try await writer.checkpoint() })))
            } catch {
                post.yield(.synced(epoch: epoch, .failure((error as? HaulError) ?? HaulError(.fileSystem, "\(error)"))))
            }
        }
    }

    func startVerify(_ target: DownloadStateMachine.VerifyTarget) async {
        let record = self.record
        let (expected, digest) = machine.withLockedValue { ($0.expectedLength, $0.digestToVerify) }
        let name = target == .published ? record.fileName : DestinationFiles.partName(record)
        let (post, io) = (self.post, io)
        let directory: Result<DownloadDirectory, HaulError>
        do {
            directory = .success(try await resolvedDirectory())
        } catch {
            directory = .failure(diskError(error))
        }
        verifyTask = Task {
            guard let name else {
                post.yield(.verified(Verifier.Verdict(error: HaulError(.internal, "nothing to verify: the download has no file name"))))
                return
            }
            switch directory {
            case .success(let directory):
                post.yield(.verified(await Verifier.verify(name, in: directory, io: io, expectedLength: expected,
                                                           digest: digest, pieces: record.request.range == nil ? record.request.pieceHashes : nil,
                                                           url: record.request.url)))
            case .failure(let error):
                post.yield(.verified(Verifier.Verdict(error: error)))
            }
        }
    }

    func publish(_ target: DownloadStateMachine.VerifyTarget, replacing: Bool = false) async {
        let record = self.record
        guard let part = DestinationFiles.partName(record), let final = record.fileName else { return }
        // A periodic checkpoint's fsync uses the descriptor: it ends before the file closes (and
        // the writer itself never closes under a running fsync).
        await checkpointTask?.value
        var failure: HaulError?
        let written = writer
        writer = nil
        do {
            try await written?.close()
            let directory = try await resolvedDirectory()
            try await io.run {
                if target == .published {
                    try directory.finishPublish(part: part, final: final)
                } else if replacing {
                    try directory.replace(part: part, final: final)
                } else {
                    try directory.publish(part: part, final: final)
                }
            }
        } catch {
            failure = diskError(error)
        }
        await execute(machine.withLockedValue { $0.published(failure) })
    }

    /// The published file gets the server's time (`-N`, `--remote-time`). A file system that
    /// refuses is logged: the file is complete and verified either way.
    func setModificationTime(_ seconds: Int64) async {
        guard let final = record.fileName else { return }
        do {
            let directory = try await resolvedDirectory()
            try await io.run { try directory.setModificationTime(of: final, to: seconds) }
        } catch {
            runner.logger.warning("cannot set the file's time from Last-Modified", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    func notify(_ notice: DownloadStateMachine.Notice) {
        switch notice {
        case .started(let offset):
            runner.emit(DownloadEvent(id: id, kind: .started(offset: offset)))
        case .retrying(let attempt, let delay, let error):
            runner.logger.info("retrying", metadata: ["id": "\(id)", "attempt": "\(attempt)", "delay": "\(delay)", "after": "\(error)"])
            runner.emit(DownloadEvent(id: id, kind: .retrying(attempt: attempt, delay: delay, error: error)))
        case .restarted(let reason, let cause):
            runner.logger.notice("starting over", metadata: ["id": "\(id)", "reason": "\(reason)", "cause": "\(cause.rawValue)"])
            runner.emit(DownloadEvent(id: id, kind: .restarted(reason: reason, cause: cause)))
        case .connectionRefused(let connection, let error, let retryIn):
            // The host's budget, over every download to it, goes down for a while too.
            runner.budgets?.refused(host: host, seconds: max(retryIn.seconds, Self.refusalMemory))
            runner.logger.info("server refused a connection", metadata: [
                "id": "\(id)", "connection": "\(connection)", "error": "\(error)", "next try in": "\(retryIn)"])
        case .validatorDistrusted(let reason):
            runner.logger.info("validator", metadata: ["id": "\(id)", "reason": "\(reason)"])
        case .sourceDropped(let url, let reason):
            runner.logger.warning("source dropped", metadata: ["id": "\(id)", "url": "\(url)", "reason": "\(reason)"])
        case .piecesRefetched(let reason):
            runner.logger.warning("fetching pieces again", metadata: ["id": "\(id)", "reason": "\(reason)"])
        case .urlExpiring(let error):
            runner.logger.warning("URL expired; running the refresh command", metadata: ["id": "\(id)", "error": "\(error.message)"])
        case .urlRefreshed(let url):
            // A signed URL's query is a credential: only where it leads is logged.
            runner.logger.warning("continuing from a refreshed URL", metadata: ["id": "\(id)", "host": "\(url.scheme)://\(url.host)"])
        case .notModified:
            notModified = true
            runner.logger.info("not modified on the server", metadata: ["id": "\(id)"])
        case .sourceSetAside(let url, let error, let retryIn):
            runner.logger.info("source set aside", metadata: ["id": "\(id)", "url": "\(url)", "error": "\(error)", "next try in": "\(retryIn)"])
        }
    }

    func announceEnd() {
        let (record, completed, total) = machine.withLockedValue { ($0.record, $0.completedLength, $0.expectedLength) }
        let kind: DownloadEvent.Kind
        switch record.status {
        case .completed:
            runner.emit(DownloadEvent(id: id, kind: .progress(Progress(
                completed: completed, total: total, bytesPerSecond: speed.bytesPerSecond, connections: 0))))
            let path = DestinationFiles.finalPath(record) ?? ""
            kind = notModified ? .alreadyComplete(path: path) : .completed(path: path)
        case .failed:
            kind = .failed(record.error ?? HaulError(.internal, "failed without an error"))
        case .paused:
            kind = .paused
        case .removed:
            kind = .removed
        default:
            kind = .interrupted
        }
        runner.emit(DownloadEvent(id: id, kind: kind))
    }

    /// How long a host's lowered budget lasts at least after a refusal.
    static let refusalMemory = 60.0

    func diskError(_ error: any Error) -> HaulError {
        (error as? HaulError) ?? HaulError(.fileSystem, "\(error)")
    }
}
