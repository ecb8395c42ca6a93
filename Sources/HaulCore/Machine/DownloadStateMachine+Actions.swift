/// What the machine asks of the runner: actions, notices for the user, and the verdict on each
/// chunk of a body.
extension DownloadStateMachine {
    /// Things worth telling the user; the runner turns them into events.
    public enum Notice: Hashable, Sendable {
        /// The run began with `offset` bytes already in hand (0: from the first byte).
        case started(offset: Int64)
        /// A connection's attempt failed with `error`; it tries again after `delay`. `attempt`: its
        /// failures since it last made progress.
        case retrying(attempt: Int, delay: Duration, error: HaulError)
        /// The bytes so far were thrown away and the download starts over: `reason` for the user,
        /// `cause` for metrics and logs.
        case restarted(reason: String, cause: RestartCause)
        /// The server refused an extra connection (429, 503): it is dropped, the others go on, and
        /// one more may be tried after `retryIn`.
        case connectionRefused(ConnectionID, HaulError, retryIn: Duration)
        /// Every byte is in and every connection has closed: what is left is the disk's and the
        /// store's (verify, publish, the final save), which goes through `finishBytes` bytes (to
        /// sync and verify; 0 for a copy checked already). The queue gives the slot of a short
        /// finish to the next download meanwhile (`QueueSlots.shortFinish`).
        case transferEnded(finishBytes: Int64)
        /// No count was named, and the last one paid: the download now runs over up to this many.
        case connectionsGrown(Int)
        /// No count was named: the download keeps this many (the last step up did not pay, or
        /// too little is left to measure another).
        case connectionsSettled(Int)
        /// The server's validators are trusted less from now on (a CDN that ignores `If-Range`
        /// with an ETag, an ETag that changes with every request).
        case validatorDistrusted(reason: String)
        /// A source (mirror) is not used again in this run: it is dead, or serves another file.
        case sourceDropped(url: String, reason: String)
        /// A source failed; the others go on, and it is asked again after `retryIn`.
        case sourceSetAside(url: String, error: HaulError, retryIn: Duration)
        /// `-N`: the server answered 304; the local file is kept as it is.
        case notModified
        /// Pieces failed their digests and are fetched again (`+PieceCheck`).
        case piecesRefetched(reason: String)
        /// Saving the record failed; the next checkpoint saves again (`persistFailed`).
        case saveFailed(HaulError)
        /// The URL expired; the refresh command is asked for a new one (`+Expiry`).
        case urlExpiring(HaulError)
        /// The refresh command gave this URL; the download goes on with it.
        case urlRefreshed(RemoteURL)
    }

    /// What the runner is asked to do, in the order given; each case says what to report back.
    public enum Action: Hashable, Sendable {
        /// Send this request on this connection, then report `responseReceived` or `transferFailed`.
        case request(ConnectionID, RequestPlan)
        /// Stream this connection's body: each chunk goes through `received` (which says where
        /// its bytes go); then report `bodyEnded` or `transferFailed`.
        case receive(ConnectionID)
        /// Stop this connection's request or body and drop it; report `transferFailed` (or
        /// whatever it finishes with) once it has stopped, or `connectionClosed` when nothing
        /// ran for it (its answer came and its body was not read yet).
        case close(ConnectionID)
        /// Start this timer; when it fires after the duration, report `timerFired`.
        case schedule(Timer, after: Duration)
        /// Cancel this timer if it has not fired yet.
        case cancelTimer(Timer)
        /// Give the download its final name if it has none yet: `-o`, else `Content-Disposition`,
        /// else the final URL. Report it with `setFileName`.
        case nameFile(contentDisposition: String?, finalURL: RemoteURL)
        /// Save `persistentRecord` (only durable bytes). Report a failure: `leaseLost`,
        /// `storeUnavailable`, or `persistFailed` for any other.
        case persist
        /// Cut the `.part` file to this length (0: start over). Only after a `.persist` that
        /// claims no more than that.
        case truncate(to: Int64)
        /// Flush every write, fsync the `.part` once, then report `synced` with what the writer
        /// has on disk for each part (its start offset to the byte after its last written one),
        /// or `diskFailed`; all before the next action (a stop's `.persist` stores what it synced).
        case checkpoint(epoch: Int)
        /// The same beside the connections (a slow fsync delays no stop and no request); report
        /// `backgroundCheckpointEnded`. The machine asks for one at a time.
        case backgroundCheckpoint(epoch: Int)
        /// Flush every write and note, without fsync, where each part's written bytes end, with
        /// the entity and this boot: what a restart on the same boot may trust after a kill (the
        /// page cache outlives the process, not the machine). Nothing to report.
        case noteProgress
        /// Check length and checksum; report `verified`.
        case verify(VerifyTarget)
        /// Stop a verification in progress (a remove); it reports `verified` with an error.
        case cancelVerify
        /// Give the `.part` its final name (or finish a publish a crash interrupted); report `published`.
        case publish(VerifyTarget)
        /// `-N`: give the verified `.part` the final name, replacing the older file there in one
        /// rename; report `published`.
        case replaceFinal
        /// Set the published file's modification time (seconds since 1970) from `Last-Modified`
        /// (`-N`, `--remote-time`). Nothing to report: a file system that refuses it costs the
        /// time, not the file.
        case setModificationTime(Int64)
        /// Tell the user (the runner turns it into an event); nothing to report.
        case notify(Notice)
        /// Drop every write not yet in the file and close it: another host owns the file now.
        case discardWrites
        /// Run the refresh command for a new URL in place of `expired`; report `urlRefreshed`.
        /// Cancelled by `.finish`.
        case refreshURL(expired: RemoteURL)
        /// The run is over: `record` says how (completed, failed, or the status it stopped with),
        /// and the end is what the user is told.
        case finish(End)
    }

    /// How a run ended: the last thing the user hears of it.
    public enum End: Hashable, Sendable {
        /// Verified and published under its final name.
        case completed
        /// `-N`: the server's file is not newer than the local one, which is kept as it is.
        case notModified
        /// Failed with this error, which the record keeps too.
        case failed(HaulError)
        /// Paused; the record says paused.
        case paused
        /// Removed; the record says removed.
        case removed
        /// Stopped to go on later (a shutdown, the store out of reach), or another host took the
        /// download over.
        case interrupted
    }

    /// What to do with one chunk of a body: skip, compare with the disk, write, and whether to
    /// stop reading.
    public struct Accepted: Hashable, Sendable {
        /// Bytes at the chunk's start to drop (a 200 answer for bytes before the range).
        public var skip: Int
        /// Bytes after those to compare with the file at `compareOffset` (the overlap check).
        public var compare: Int
        /// Where the compared bytes are in the `.part` file (a file offset, not a remote one).
        public var compareOffset: Int64
        /// Bytes after those to write at `writeOffset`, for the part starting at `part`.
        public var keep: Int
        /// Where the kept bytes go in the `.part` file: a file offset, the remote offset less the
        /// start of `--range`.
        public var writeOffset: Int64
        /// The start of the part the kept bytes belong to, as a remote offset: what
        /// `ChunkWriter.write` takes as `part`.
        public var part: Int64
        /// Stop reading and report `bodyEnded`: the part has every byte it needs and the body
        /// would bring more (a part shortened by a steal, a whole answer past `--range`). A body
        /// that ends where its part or piece ends is read to its end, so its connection is kept.
        public var partComplete: Bool
        /// So many bytes came since the last note that one is due before the next tick: once
        /// this chunk is handed to the writer, report `noteDue`.
        public var noteDue = false

        /// A verdict as given; `noteDue` starts false.
        public init(
            skip: Int, compare: Int, compareOffset: Int64, keep: Int, writeOffset: Int64, part: Int64,
            partComplete: Bool
        ) {
            self.skip = skip
            self.compare = compare
            self.compareOffset = compareOffset
            self.keep = keep
            self.writeOffset = writeOffset
            self.part = part
            self.partComplete = partComplete
        }

        static let nothing = Accepted(
            skip: 0, compare: 0, compareOffset: 0, keep: 0, writeOffset: 0, part: 0, partComplete: true)
    }
}
