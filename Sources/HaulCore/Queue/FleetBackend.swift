/// One host of a fleet, as the queue's backend (`DownloadQueue.Backend.fleet`): how many downloads
/// it runs at once, and its clock. When a renewal is due (`tick(now:)`), how long the database has
/// been out of reach (`renewalFailed(now:)`), and how long a pause or remove asked of another host
/// may take before its caller is told so (`remoteAsked`, `remoteSeen`) are decided here, on the
/// seconds the manager's clock gives, so a test drives them with plain numbers.
public struct FleetBackend: Sendable, Hashable {
    /// A caller waiting for another host to carry out a pause or a remove: which download, which
    /// command, and which of several waits for it this is.
    public struct RemoteAsk: Sendable, Hashable {
        /// The download another host holds.
        public var id: DownloadID
        /// What was asked of it.
        public var command: FleetCommand
        /// Tells apart two callers waiting for the same download.
        public var number: UInt64
    }

    /// How long the host holding a download has to carry out a pause or remove asked of it
    /// before the caller hears `conflict` (the command stays stored, and its host applies it at
    /// its next renewal). A live host hears the command at once (the database's notification)
    /// or within a renewal, about a second.
    public static let remoteDeadline: Double = 10

    /// Downloads this host runs at once; at least 1.
    public var limit: Int
    /// How often this host renews its leases (at most a quarter of a lease).
    public let renewInterval: Duration
    /// How long a lease lasts without a renewal.
    public let leaseTimeout: Duration
    /// When a renewal last succeeded, or the first tick came; nil before it.
    var lastRenewal: Double?
    /// When a renewal was last tried; nil before the first.
    var lastAttempt: Double?
    /// Another host notified a command for this one: renew at the next tick, due or not.
    var renewNow = false
    /// Whether the host's loop was started (`startClaiming`).
    var claiming = false
    /// When the unfinished groups were last looked at (the first tick: the start read them).
    var lastGroupCheck: Double?
    /// Callers waiting for other hosts, and since when (seconds).
    var asks: [RemoteAsk: Double] = [:]
    var askNumbers: UInt64 = 0

    /// A host running `limit` downloads at once (anything under 1 counts as 1), renewing its
    /// leases of `leaseTimeout` every `renewInterval` but at least four times per lease.
    public init(limit: Int, renewInterval: Duration = .seconds(1), leaseTimeout: Duration = .seconds(30)) {
        self.limit = max(1, limit)
        self.leaseTimeout = leaseTimeout
        self.renewInterval = min(renewInterval, leaseTimeout / 4)
    }

    /// How often the host's loop wakes (`tick(now:)`): claims look for work every second whatever
    /// the renewal's pace.
    public var wakeInterval: Duration { min(.seconds(1), renewInterval) }

    /// The host's loop starts, waking every `wakeInterval`; nil when it started already.
    mutating func startClaiming() -> Duration? {
        guard !claiming else { return nil }
        claiming = true
        return wakeInterval
    }

    /// Whether a renewal is due at `now`: its interval passed since the last try, another host
    /// left a command (`renewNow`), or downloads wait for the database (`suspended`). Marks it
    /// tried.
    mutating func renewalDue(now: Double, suspended: Bool) -> Bool {
        if lastRenewal == nil { lastRenewal = now }
        let due = lastAttempt.map { now - $0 >= renewInterval.seconds } ?? true
        guard due || suspended || renewNow else { return false }
        lastAttempt = now
        renewNow = false
        return true
    }

    /// Whether the unfinished groups are due for a look at `now`: once a lease timeout, so a group
    /// whose last member completed on a host that died before its finish is finished by another
    /// host within about a lease (the completions this host sees check their groups at once).
    mutating func groupCheckDue(now: Double) -> Bool {
        guard let last = lastGroupCheck else {
            lastGroupCheck = now
            return false
        }
        guard now - last >= leaseTimeout.seconds else { return false }
        lastGroupCheck = now
        return true
    }

    /// How long the database has been out of reach at `now`: since the last renewal that
    /// succeeded.
    func outage(now: Double) -> Duration {
        .milliseconds(Int64(((now - (lastRenewal ?? now)) * 1000).rounded()))
    }

    /// A caller starts waiting for another host to carry out `command` on `id`.
    mutating func ask(_ command: FleetCommand, of id: DownloadID, now: Double) -> RemoteAsk {
        askNumbers += 1
        let ask = RemoteAsk(id: id, command: command, number: askNumbers)
        asks[ask] = now
        return ask
    }

    /// What the caller of `ask` hears, now that the record shows `status` and `holder` holds it:
    /// done (the status it asked for, or the download ended meanwhile), refused (not done within
    /// `remoteDeadline`), or nothing yet.
    mutating func answer(_ ask: RemoteAsk, status: DownloadStatus, holder: String?, now: Double) -> DownloadQueue
        .Action?
    {
        guard let since = asks[ask] else { return nil }
        let wanted: DownloadStatus = ask.command == .pause ? .paused : .removed
        if status == wanted || status.isTerminal {
            asks[ask] = nil
            return .remoteAnswered(ask)
        }
        guard now - since >= Self.remoteDeadline else { return nil }
        asks[ask] = nil
        let verb = ask.command == .pause ? "paused" : "removed"
        return .remoteRefused(
            ask,
            HaulError(
                .conflict,
                "download \(ask.id) is held by \(holder ?? "another host"), which has not applied it yet; "
                    + "it will at its next renewal (it stays to be \(verb))"))
    }

    /// The caller stopped waiting (its read of the record failed, or it was cancelled).
    mutating func forget(_ ask: RemoteAsk) {
        asks[ask] = nil
    }
}
