/// One download's life as a value: events in, actions out, no I/O (DESIGN rule 1). It owns every
/// decision about the download: which connections to open and for which bytes, what a response
/// means for the bytes on disk, when to retry, to checkpoint, to give up, to stop, to verify.
/// The runner in `Haul` performs the actions and reports back with events; tests drive it with
/// plain values.
///
/// Modelled on async-http-client's `HTTPConnectionPool.StateMachine`: every event about a
/// connection names it, and one event may return several actions (the first response that
/// proves range support opens the other connections).
///
/// Bytes: the file is cut into parts (segments). Each part knows how many of its bytes were
/// accepted for writing (`appended`, the next write position) and how many are durable (fsynced;
/// the only figure ever persisted, DESIGN rule 2). A connection works on one part at a time.
public struct DownloadStateMachine: Sendable {
    public typealias ConnectionID = Int

    public enum State: Hashable, Sendable {
        /// Not started in this process; `record.status` says why (queued, paused, ...).
        case idle
        /// Connections are requesting and receiving.
        case downloading
        /// Every byte is on disk; length and checksum are being checked.
        case verifying
        /// Verified; the `.part` is getting its final name.
        case publishing
        /// Terminal for this run.
        case completed
        case failed
        case stopped
        /// Another host took the download over: this run writes nothing more.
        case lost
    }

    /// Timers the runner keeps for the machine.
    public enum Timer: Hashable, Sendable {
        /// A connection's backoff after a failure.
        case retry(ConnectionID)
        /// Try one more connection after a server refused one.
        case moreConnections
    }

    /// Which file `.verify` checks.
    public enum VerifyTarget: Hashable, Sendable {
        case part
        /// A crash came after the verified `.part` got its final name but before the record
        /// said completed: the bytes are checked where they now are, never fetched again.
        case published
    }

    /// What the runner learned about the files before starting.
    public struct LocalFiles: Hashable, Sendable {
        /// Size of the `.part` file; nil when there is none.
        public var partSize: Int64?
        /// Whether the final file is the published `.part` (see `VerifyTarget.published`).
        public var published: Bool
        /// Progress noted by a run of this download that was killed on this boot (`.noteProgress`),
        /// as `synced` takes it: part start to the file offset after its last written byte. The
        /// runner passes only notes about this `.part` and this entity, and syncs the file first,
        /// so these bytes are durable now.
        public var noted: [Int64: Int64]
        /// `-N`: the modification time (seconds since 1970) of the final file already there,
        /// which a fresh start sends as `If-Modified-Since`; nil when there is none.
        public var finalModified: Int64?

        public init(partSize: Int64?, published: Bool, noted: [Int64: Int64] = [:], finalModified: Int64? = nil) {
            self.partSize = partSize
            self.published = published
            self.noted = noted
            self.finalModified = finalModified
        }
    }

    struct Part: Hashable, Sendable {
        var start: Int64
        /// Last byte, inclusive; nil while the entity's length is unknown.
        var end: Int64?
        /// Bytes accepted for writing: the next write goes to `start + appended`.
        var appended: Int64
        /// Bytes fsynced: what a checkpoint may store.
        var durable: Int64
        var owner: ConnectionID?

        var next: Int64 { start + appended }
        var remaining: Int64? { end.map { $0 - next + 1 } }
        var isComplete: Bool { remaining.map { $0 <= 0 } ?? false }
    }

    struct Connection: Hashable, Sendable {
        enum Phase: Hashable, Sendable {
            case requesting(RequestPlan)
            case receiving
            case waiting
            /// Told to close; the next report from it is its last.
            case closing
        }

        var phase: Phase
        /// Start offset of the part it works on.
        var part: Int64
        /// The last byte the current request asked for, then the last its response carries;
        /// nil: to the end of the entity. A body that reaches it ends by itself and leaves its
        /// connection open for the next piece.
        var requestedEnd: Int64?
        var skip: Int64 = 0
        var compare: Int64 = 0
        var compareOffset: Int64 = 0
        /// Bytes written by this connection's current attempt.
        var received: Int64 = 0
        /// Failed attempts since the last one that made progress (see `DownloadStateMachine+Retry`).
        var failures = 0
        var pace = Pace()
        /// Bytes/s over the last ticks; nil until measured.
        var speed: Double?
        var bytesAtLastTick: Int64 = 0
        /// Not the download's first connection: a refusal is the server's limit, not an error.
        var isExtra: Bool
        /// The index in `sources` of the URL this connection asks.
        var source = 0
        /// Its request is a probe: the bytes are compared with the disk, none written
        /// (`+Sources`).
        var probing = false

        var isWorking: Bool {
            switch phase {
            case .requesting, .receiving: true
            case .waiting, .closing: false
            }
        }
    }

    public internal(set) var record: DownloadRecord
    public internal(set) var state: State = .idle
    public let settings: Settings
    var parts: [Part] = []
    var connections: [ConnectionID: Connection] = [:]
    /// The URLs the bytes may come from and what this run knows of each (`+Sources`).
    public internal(set) var sources: SourceSet
    /// How far validators are trusted in this run (`+Validators`): CDNs that mishandle `If-Range`
    /// or change their ETags lower it.
    var validatorTrust: ValidatorTrust = .etag
    /// The machine's clock as of the last `start` or `tick` (seconds): when set-aside sources
    /// may be asked again.
    var now: Double = 0
    var nextConnectionID = 0
    /// The server answered a range request with 206 in this run: more connections may open.
    var rangesProven = false
    /// Refused connections lower this below `record.request.connections`.
    var connectionLimit: Int
    /// What the host's connection budget lets this download have (`setAllowance`).
    var allowance = Int.max
    /// The most connections this download may have now.
    var limit: Int { min(connectionLimit, allowance) }
    var refusals = 0
    var moreConnectionsScheduled = false
    /// Bumped on every start-over: checkpoints taken before it are ignored.
    public internal(set) var epoch = 0
    /// Set by a stop while connections are still closing, or while verifying.
    var stopStatus: DownloadStatus?
    /// The record needs a start-over once every connection has closed.
    var restartPending = false
    var restarts = 0
    var lastCheckpoint: Double = 0
    /// `completedLength` when the last periodic checkpoint was asked for.
    var completedAtLastCheckpoint: Int64 = 0
    /// `completedLength` at the last `.noteProgress`.
    var completedAtLastNote: Int64 = 0
    /// Bytes accepted since the last note (or its request by `noteDue`), counted on the hot path.
    var bytesSinceNote: Int64 = 0
    /// What the last response stored about the entity; a response that tells nothing new is
    /// not stored again (a steal's request costs no fsync of the store).
    var storedEntity: StoredEntity?

    struct StoredEntity: Equatable {
        var validator: EntityValidator?
        var totalLength: Int64?
        var finalURL: String?
        var digest: ServerDigest?
    }
    /// Bytes thrown away by start-overs in this run and not yet fetched again: no progress.
    var refetchDebt: Int64 = 0
    /// The server's clock as the last response came (`Retry-After` times are shown in it).
    var lastNowSince1970: Int64?
    /// `-N`: sent as `If-Modified-Since` until the server answers with the file (then it is
    /// newer) or 304 (then the download ends at once, the local file as it is).
    var modifiedSince: Int64?
    /// The `Last-Modified` of the last 200 or 206: the published file's time with `-N` or
    /// `--remote-time`.
    var remoteModified: Int64?
    var verifyTarget: VerifyTarget = .part
    /// Every byte is in, but a connection told to close has not reported back yet.
    var verifyPending = false
    /// Remote offset of the `.part` file's first byte (the start of `--range`).
    let fileBase: Int64
    /// The piece length of a download with piece digests and several sources, whose writers
    /// are tracked (`+PieceCheck`); nil otherwise.
    let pieceLength: Int64?
    /// Per piece, the sources (bit `i` for source `i`) that wrote any of its bytes in this run.
    var pieceWriters: [Int: UInt64] = [:]
    /// Piece checks that failed in this run.
    var pieceChecks = 0
    /// URL refreshes since the download last made progress (`+Expiry`).
    var urlRefreshes = 0
    var completedAtLastRefresh: Int64 = 0
    /// Set while the runner asks the refresh command for a new URL: why the old one expired.
    var refreshingURL: HaulError?

    public init(record: DownloadRecord, settings: Settings) {
        self.record = record
        self.settings = settings
        self.connectionLimit = max(1, record.request.connections)
        self.sources = Self.sources(of: record.request, settings: settings)
        self.fileBase = record.request.range?.start ?? 0
        self.pieceLength = record.request.sources.count > 1 && record.request.range == nil ? record.request.pieceHashes?.length : nil
        self.parts = record.segments.map { Part(start: $0.start, end: $0.end, appended: $0.written, durable: $0.written) }
    }

    /// A fresh account of `request`'s sources, judged by `settings`.
    static func sources(of request: DownloadRequest, settings: Settings) -> SourceSet {
        var sources = SourceSet(request.sources)
        sources.speedLifetime = settings.sourceSpeedLifetime
        return sources
    }

    /// Which connection works on each part right now (by part start), for tests and diagnostics.
    public var owners: [Int64: ConnectionID] {
        var owners: [Int64: ConnectionID] = [:]
        for part in parts { if let owner = part.owner { owners[part.start] = owner } }
        return owners
    }

    // MARK: Reading

    /// The record as it may be stored: every part at its durable offset, never beyond.
    public var persistentRecord: DownloadRecord {
        var stored = record
        stored.segments = parts.map { Segment(start: $0.start, end: $0.end, written: min($0.durable, $0.appended)) }
        return stored
    }

    /// Bytes accepted for writing so far (live progress; ahead of the durable figure).
    public var completedLength: Int64 { parts.reduce(0) { $0 + $1.appended } }

    /// Bytes the download will have when complete, once known.
    public var expectedLength: Int64? {
        if record.request.range == nil, let total = record.totalLength { return total }
        var sum: Int64 = 0
        for part in parts {
            guard let end = part.end else { return nil }
            sum += end - part.start + 1
        }
        return sum
    }

    /// Connections of this download, whatever their phase (what the host's budget counts).
    public var connectionCount: Int { connections.count }

    /// Connections requesting or receiving right now.
    public var activeConnections: Int {
        connections.values.filter(\.isWorking).count
    }

    // MARK: Lifecycle events

    /// Begin (or continue) this download, given what is on disk.
    public mutating func start(_ local: LocalFiles, now: Double) -> [Action] {
        record.status = .running
        record.error = nil
        lastCheckpoint = now
        self.now = now
        takeNoted(local)
        takeFinalModified(local)
        completedAtLastCheckpoint = completedLength
        completedAtLastNote = completedLength
        // The furthest byte the record claims; a part with no byte claims nothing.
        let claimed = parts.filter { $0.durable > 0 }.map { $0.start - fileBase + $0.durable }.max() ?? 0
        if local.published, parts.allSatisfy(\.isComplete), expectedLength != nil {
            state = .verifying
            verifyTarget = .published
            return [.persist, .notify(.started(offset: completedLength)), .verify(.published)]
        }
        var actions: [Action] = []
        if parts.contains(where: { $0.durable > 0 }), (local.partSize ?? 0) < claimed {
            // The store may only claim bytes the `.part` really has.
            resetEntity()
            actions.append(.notify(.restarted(reason: "the .part file is shorter than its checkpoint; starting over", cause: .partShorter)))
        }
        actions.insert(.persist, at: 0)
        actions.append(.notify(.started(offset: completedLength)))
        if parts.allSatisfy(\.isComplete), expectedLength != nil {
            return actions + beginVerify()
        }
        state = .downloading
        return actions + openFirstConnection()
    }

    /// The user changed the download's rate limit while it runs: stored with the next write.
    public mutating func setRateLimit(_ bytesPerSecond: Int64?) -> [Action] {
        record.request.maxBytesPerSecond = bytesPerSecond
        return [.persist]
    }

    /// The final name was chosen (after `.nameFile`).
    public mutating func setFileName(_ name: String) {
        record.fileName = name
    }

    /// Pause, shutdown, remove: stop now, keeping what is on disk. `status` is what the record
    /// says afterwards (paused, queued or running for a shutdown that resumes by itself, removed).
    /// A verification runs to its end, except for a remove.
    public mutating func stopRequested(status: DownloadStatus) -> [Action] {
        switch state {
        case .idle, .downloading:
            stopStatus = status
            return closeEverything() + finishStopIfClosed()
        case .verifying:
            guard status == .removed else {
                stopStatus = stopStatus ?? status
                return []
            }
            stopStatus = .removed
            return [.cancelVerify]
        case .publishing:
            stopStatus = stopStatus ?? status
            return []
        case .completed, .failed, .stopped, .lost:
            return []
        }
    }

    /// Periodic: measures connection speeds and says when a checkpoint is due.
    public mutating func tick(now: Double, elapsed: Double) -> [Action] {
        guard state == .downloading else { return [] }
        self.now = now
        var bySource: [(source: Int, count: Int64)] = []
        for (id, connection) in connections where connection.phase == .receiving {
            var updated = connection
            let rate = Double(connection.received - connection.bytesAtLastTick) / max(elapsed, 0.001)
            updated.speed = connection.speed.map { $0 * 0.5 + rate * 0.5 } ?? rate
            updated.bytesAtLastTick = connection.received
            connections[id] = updated
            if sources.count > 1, !connection.probing, connection.bytesAtLastTick > 0 {
                bySource.append((connection.source, connection.received - connection.bytesAtLastTick))
            }
        }
        measureSources(bySource, elapsed: elapsed)
        let slow = enforceSpeedLimit(now: now) + leaveSlowSources()
        let completed = completedLength
        let due = now - lastCheckpoint >= settings.checkpointInterval
            || completed - completedAtLastCheckpoint >= settings.checkpointBytes
        guard due, parts.contains(where: { $0.appended > $0.durable }) else {
            guard settings.notesProgress, completed != completedAtLastNote else { return slow }
            completedAtLastNote = completed
            bytesSinceNote = 0
            return slow + [.noteProgress]
        }
        lastCheckpoint = now
        completedAtLastCheckpoint = completed
        return slow + [.checkpoint(epoch: epoch)]
    }

    /// A checkpoint's fsync returned: `written` maps each part's start (remote offset) to the
    /// file offset after the last byte the writer had put in the file for it before the fsync.
    public mutating func synced(epoch syncedEpoch: Int, written: [Int64: Int64]) -> [Action] {
        guard syncedEpoch == epoch else { return [] }
        var changed = false
        for index in parts.indices {
            guard let end = written[parts[index].start] else { continue }
            let durable = min(parts[index].appended, max(0, end - (parts[index].start - fileBase)))
            if durable > parts[index].durable {
                parts[index].durable = durable
                changed = true
            }
        }
        return changed ? [.persist] : []
    }

    /// The result of `.verify`: an error, or the pieces whose digests failed (`+PieceCheck`;
    /// then the whole-file digest failed too, and they are fetched again first).
    public mutating func verified(_ error: HaulError?, badPieces: [Int] = []) -> [Action] {
        guard state == .verifying else { return unexpected("verification") }
        var error = error
        if !badPieces.isEmpty {
            if verifyTarget == .part, stopStatus != .removed { return refetch(badPieces) }
            error = error ?? HaulError(.checksumMismatch, "\(record.request.url): \(badPieces.count) pieces fail their digests")
        }
        if let error {
            if stopStatus == .removed {
                return stopNow()
            }
            // A wrong file is never kept as the basis of a resume: stored as empty, then cut.
            resetEntity()
            return [.persist, .truncate(to: 0)] + fail(error)
        }
        state = .publishing
        return [publishAction]
    }

    /// The result of `.publish`.
    public mutating func published(_ error: HaulError?) -> [Action] {
        guard state == .publishing else { return unexpected("publish") }
        if let error {
            // Verified bytes stay in the `.part`; a rerun publishes them once the name is free.
            return fail(error)
        }
        record.status = .completed
        state = .completed
        return [.persist] + remoteTimeActions + [.finish]
    }

    /// Writing or syncing the `.part` failed (disk full, permissions): nothing more can be
    /// written; the record keeps only durable bytes. `connection` is the one whose write failed
    /// (this is its last report).
    public mutating func diskFailed(_ error: HaulError, connection: ConnectionID? = nil) -> [Action] {
        if let connection { connections[connection] = nil }
        guard state == .downloading || state == .idle else { return [] }
        return fail(error)
    }

    /// The store refused to save the record because another host took the download over (a
    /// fleet's lease, see `SharedQueueStore`): nothing more may be written, to the store or to
    /// the file. Every connection closes, what the writer holds is dropped, and the run ends
    /// without a checkpoint; the record is the new holder's.
    public mutating func leaseLost() -> [Action] {
        guard state != .lost else { return [] }
        state = .lost
        return closeEverything() + [.discardWrites, .finish]
    }

    /// The shared store cannot be reached: stop at this checkpoint as a shutdown would (status
    /// left running), so the download goes on, here or elsewhere, once it is back.
    public mutating func storeUnavailable() -> [Action] {
        stopRequested(status: .running)
    }

    // MARK: Helpers

    mutating func fail(_ error: HaulError) -> [Action] {
        record.status = .failed
        record.error = error
        state = .failed
        // What is on disk is kept for a later retry: checkpoint it.
        return closeEverything() + [.checkpoint(epoch: epoch), .persist, .finish]
    }

    mutating func beginVerify() -> [Action] {
        state = .verifying
        verifyTarget = .part
        lastCheckpoint = 0
        return [.checkpoint(epoch: epoch), .verify(.part)]
    }

    /// Forgets every byte and fact about the remote entity: it changed, or it cannot be resumed.
    mutating func resetEntity() {
        forgetKeptBytes()
        record.validator = nil
        record.totalLength = nil
        record.serverDigest = nil
        // The parts are reset too: the next response stores the record whatever it says, before
        // the `.part` is cut (a same-looking entity would otherwise leave the old claims stored).
        storedEntity = nil
        let range = record.request.range
        parts = [Part(start: range?.start ?? 0, end: range?.end, appended: 0, durable: 0)]
        rangesProven = false
        // Nothing is proven about an entity that is gone.
        sources.forgetProofs()
        epoch += 1
    }

    mutating func unexpected(_ what: String) -> [Action] {
        assertionFailure("unexpected \(what) in state \(state)")
        return fail(HaulError(.internal, "unexpected \(what) in state \(state)"))
    }
}
