extension DownloadStateMachine {
    /// What tunes the machine: pieces and steals, checkpoints and notes, retries, mirrors. The
    /// defaults are the engine's.
    public struct Settings: Hashable, Sendable {
        /// When a failed connection tries again and how often, and the low-speed rule.
        public var retry: RetryPolicy
        /// No part smaller than this is split off at the start (`-k`, like aria2's).
        public var minimumSegment: Int64
        /// A download over several connections asks for each connection's share in this many
        /// pieces, so requests end by themselves and connections are kept for the next one
        /// (`SegmentPlanner.pieceSize`); 0: each request asks for the rest of its part.
        ///
        /// Two: each piece after the first costs its connection a round trip with nothing
        /// arriving, which a far server makes dear. Through the relay (RTT 80 ms, 4 MiB/s per
        /// connection, 128 MiB over TLS) `-x 8` took 4.81 s with four pieces, 4.64 s with two and
        /// 4.56 s with one (aria2c 4.60 s); `-x 16` 2.81, 2.66 and 2.57 s; without `-x` (growing
        /// from 4) 4.86-4.93, 4.41-4.63 and 4.57-4.76 s. One piece leaves growth and stealing
        /// nothing unasked, so they cut running requests (and their connections); two leave
        /// half of each share. On loopback the three were level.
        public var piecesPerConnection: Int64
        /// The largest piece one request asks for.
        public var maximumPiece: Int64
        /// An idle connection steals from a running part only if it gets at least this much.
        public var minimumSteal: Int64
        /// ...and only if that part's owner, at its measured speed, needs longer than this many
        /// seconds for the rest: a new request for the last moments of a part costs more than it
        /// saves, and servers that give each request a burst would invite a cascade of them.
        public var minimumStealSeconds: Double
        /// Seconds between checkpoints while bytes flow: the most a crash can cost.
        public var checkpointInterval: Double
        /// A checkpoint is also due once this many bytes arrived since the last one, so the fsync
        /// a completion waits for stays short however fast the download runs (at most one
        /// checkpoint per tick).
        public var checkpointBytes: Int64
        /// Without a validator, a resume re-reads this many bytes before its resume point and
        /// compares them with the disk (DESIGN rule 4).
        public var overlap: Int64
        /// The longest wait before trying one more connection after a server refused one.
        public var maxConnectionBackoff: Duration
        /// Seconds between ticks (speeds, progress, checkpoint decisions).
        public var tickInterval: Double
        /// Note progress at every tick between checkpoints (`.noteProgress`) once a quarter of
        /// `noteBytes` came since the last checkpoint: written without fsync, so a killed process
        /// loses a tick of transfer (or that quarter) instead of a checkpoint interval.
        public var notesProgress: Bool
        /// ...and as soon as this many bytes came since the last note (or a twentieth of a
        /// second's worth, when that is more), so a burst (a server's first second, a paced
        /// server's block) is noted as it arrives, before the tick.
        public var noteBytes: Int64
        /// Which HTTP versions the download's requests may use (`RequestPlan.allowsHTTP2`).
        public var httpVersions: HTTPVersionPolicy
        /// A run sent past `-j` (`SlotProbes`): under `.automatic`, its requests may go over
        /// HTTP/2 while its length is unknown or small, as streams of one connection (one TLS
        /// handshake for a hundred small files, not one each); once the file is known to be
        /// large, its new requests go over HTTP/1.1 as any download's.
        public var smallOverHTTP2 = false
        /// An expired URL is refreshed by the runner (`.refreshURL`): a refresh command is set.
        public var refreshesURL: Bool
        /// A source whose connections bring less than a `slowSourceRatio`-th of what those of
        /// another source bring is left for the others (`SourceSet.isSlow`).
        public var slowSourceRatio: Double
        /// Seconds a source's measured speed counts without a new measure: a source left for
        /// being slow is tried again after this (`SourceSet.speedLifetime`).
        public var sourceSpeedLifetime: Double
        /// With mirrors, the first request (the length still unknown) asks for at most this
        /// many bytes instead of `minimumSegment`: the first connection then reaches a piece end
        /// and moves to another mirror after that much of the first URL, however slow it is.
        public var firstPieceWithMirrors: Int64

        /// Every setting, each the engine's default unless given.
        public init(
            retry: RetryPolicy = .init(), minimumSegment: Int64 = 1 << 20, minimumSteal: Int64 = 128 << 10,
            checkpointInterval: Double = 1, checkpointBytes: Int64 = 32 << 20, overlap: Int64 = 64 << 10,
            maxConnectionBackoff: Duration = .seconds(60), tickInterval: Double = 0.25,
            minimumStealSeconds: Double = 0.5, notesProgress: Bool = false, noteBytes: Int64 = 256 << 10,
            piecesPerConnection: Int64 = 2, maximumPiece: Int64 = 64 << 20,
            httpVersions: HTTPVersionPolicy = .automatic, refreshesURL: Bool = false, slowSourceRatio: Double = 4,
            firstPieceWithMirrors: Int64 = 64 << 10, sourceSpeedLifetime: Double = 10
        ) {
            self.refreshesURL = refreshesURL
            self.slowSourceRatio = slowSourceRatio
            self.sourceSpeedLifetime = sourceSpeedLifetime
            self.firstPieceWithMirrors = firstPieceWithMirrors
            self.piecesPerConnection = piecesPerConnection
            self.maximumPiece = maximumPiece
            self.retry = retry
            self.httpVersions = httpVersions
            self.notesProgress = notesProgress
            self.noteBytes = noteBytes
            self.tickInterval = tickInterval
            self.minimumSegment = minimumSegment
            self.minimumSteal = minimumSteal
            self.minimumStealSeconds = minimumStealSeconds
            self.checkpointInterval = checkpointInterval
            self.checkpointBytes = checkpointBytes
            self.overlap = overlap
            self.maxConnectionBackoff = maxConnectionBackoff
        }
    }
}

extension DownloadStateMachine {
    /// Whether the next request may go over HTTP/2: `--http2`, or a run sent past `-j` whose file
    /// is not known to be large (`Settings.smallOverHTTP2`).
    var allowsHTTP2: Bool {
        if settings.httpVersions.allowsHTTP2 { return true }
        guard settings.httpVersions == .automatic, settings.smallOverHTTP2 else { return false }
        return (expectedLength ?? 0) <= SlotProbes.smallLength
    }
}
