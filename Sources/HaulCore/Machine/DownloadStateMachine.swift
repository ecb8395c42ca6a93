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
    /// Names one connection in the events and actions about it: the machine numbers them from 0 as
    /// it opens them, and never reuses a number within a run.
    public typealias ConnectionID = Int

    /// Where the download is in its life, with what each stage needs and nothing it does not: a
    /// stop's status exists only while stopping, the expired URL only while it is being
    /// refreshed. (The connections' phases carry their data the same way.)
    public enum State: Hashable, Sendable {
        /// Not started in this process; `record.status` says why (queued, paused, ...).
        case idle
        /// Connections are requesting and receiving.
        case downloading
        /// The entity changed: every connection was told to close; once they have, the download
        /// starts over on the new entity (`startOver`).
        case restarting
        /// The URL expired: the refresh command is asked for a new one while the connections
        /// close (`+Expiry`).
        case refreshingURL(expired: HaulError)
        /// A stop (pause, shutdown, remove) waits for the connections told to close; then it
        /// checkpoints and ends with this status.
        case stopping(DownloadStatus)
        /// Every byte is in; verification waits for the connections told to close. `stop`: a
        /// stop that came meanwhile (a verification runs to its end, except for a remove).
        case closingForVerify(stop: DownloadStatus?)
        /// Every byte is on disk; length and checksum are being checked.
        case verifying(VerifyTarget, stop: DownloadStatus?)
        /// Verified; the `.part` is getting its final name.
        case publishing
        /// Terminal for this run.
        case completed
        /// Terminal: the run failed; `record.error` says why.
        case failed
        /// Terminal: a stop ended the run; `record.status` is the status it asked for.
        case stopped
        /// Another host took the download over: this run writes nothing more.
        case lost
    }

    /// Whether a periodic checkpoint runs beside the connections (`.backgroundCheckpoint`).
    enum BackgroundCheckpoint: Hashable, Sendable {
        case none
        case running
        /// Another came due while it ran: it is asked for as soon as this one ends.
        case runningAndDueAgain
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
        /// The `.part` file, before it gets its final name.
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
        /// The `.part` is a file of this length with the digest the request names, found by that
        /// digest (a twin's file, the content store's) and checked against it as it was linked
        /// or copied: nothing is fetched (`DownloadRunner`'s copy by digest). Nil: no such copy.
        public var copied: Int64?

        /// What the runner found: `partSize` nil when there is no `.part`; `noted` empty and
        /// `finalModified` nil unless a killed run noted progress or `-N` found a final file;
        /// `copied` nil unless the `.part` is a checked copy of a file with the request's digest.
        public init(
            partSize: Int64?, published: Bool, noted: [Int64: Int64] = [:], finalModified: Int64? = nil,
            copied: Int64? = nil
        ) {
            self.partSize = partSize
            self.published = published
            self.noted = noted
            self.finalModified = finalModified
            self.copied = copied
        }
    }

    /// The download's record: its request, its status and error, and what is known of the entity.
    /// Its segments are those it started with; `persistentRecord` has the current ones.
    public internal(set) var record: DownloadRecord
    /// Where the download is in its life.
    public internal(set) var state: State = .idle
    /// The tuning the machine was made with, fixed for its life.
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
    /// No count named: the count is found by trying (`+Growth`); nil for a fixed count.
    var growth: ConnectionGrowth?
    var refusals = 0
    var moreConnectionsScheduled = false
    /// Bumped on every start-over: checkpoints taken before it are ignored.
    public internal(set) var epoch = 0
    var restarts = 0
    var lastCheckpoint: Double = 0
    /// A periodic checkpoint in flight: never two at once, and none dropped.
    var backgroundCheckpoint = BackgroundCheckpoint.none
    /// `completedLength` when the last periodic checkpoint was asked for.
    var completedAtLastCheckpoint: Int64 = 0
    /// `completedLength` at the last `.noteProgress`.
    var completedAtLastNote: Int64 = 0
    /// Bytes accepted since the last note (or its request by `noteDue`), counted on the hot path.
    var bytesSinceNote: Int64 = 0
    /// Bytes that make a note due before the tick: `settings.noteBytes`, or a twentieth of a
    /// second's worth once the download is faster than that (`measureNoteThreshold`).
    var noteThreshold: Int64 = 0
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
    /// Bytes of progress (`+Retry`) in this run, every connection's: a 200 to a range request uses
    /// no try when this grew since its connection last failed (`rangeIgnored`).
    var progressInRun: Int64 = 0
    /// The server's clock as the last response came (`Retry-After` times are shown in it).
    var lastNowSince1970: Int64?
    /// `-N`: sent as `If-Modified-Since` until the server answers with the file (then it is
    /// newer) or 304 (then the download ends at once, the local file as it is).
    var modifiedSince: Int64?
    /// The `Last-Modified` of the last 200 or 206: the published file's time with `-N` or
    /// `--remote-time`.
    var remoteModified: Int64?
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

    /// An idle machine for `record`, its parts taken from the record's segments (their written
    /// bytes counted durable); `start` begins the run.
    public init(record: DownloadRecord, settings: Settings) {
        self.record = record
        self.settings = settings
        self.connectionLimit = max(1, record.request.connections)
        self.sources = Self.sources(of: record.request, settings: settings)
        self.fileBase = record.request.range?.start ?? 0
        self.pieceLength =
            record.request.sources.count > 1 && record.request.range == nil ? record.request.pieceHashes?.length : nil
        self.parts = record.segments.map {
            Part(start: $0.start, end: $0.end, appended: $0.written, durable: $0.written)
        }
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

    /// Connections run (or close) and bytes arrive: downloading, or on the way out of it to a
    /// start-over, a new URL or a stop.
    public var isDownloading: Bool {
        switch state {
        case .downloading, .restarting, .refreshingURL, .stopping: true
        default: false
        }
    }

    /// New requests may go out: downloading, with no stop or start-over under way.
    var isFetching: Bool {
        switch state {
        case .downloading, .refreshingURL: true
        default: false
        }
    }

    /// The status a stop asked for while the download still runs, closes or verifies.
    var stopRequest: DownloadStatus? {
        switch state {
        case .stopping(let status): status
        case .closingForVerify(let stop), .verifying(_, let stop): stop
        default: nil
        }
    }
}
