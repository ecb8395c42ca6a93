/// A store that several hosts share (`HaulFleet`'s PostgreSQL store): the queue lives in it, and
/// each host takes work by claiming it with a lease.
///
/// The protocol, as the manager uses it:
/// - `claim` takes queued downloads, or running ones whose holder's lease expired, in the fleet's
///   order (priority, then position), for this host: each gets a new lease (this host, the next
///   generation, an expiry `leaseTimeout` ahead).
/// - While a download runs here, every `save` of its record is fenced: it changes the row only
///   if the lease is still this host's generation, renews the expiry, and otherwise throws
///   `leaseLost`. `renew` extends every lease this host holds, about once a second, and carries
///   commands (pause, remove) other hosts left for them.
/// - A save of a record nobody holds (a new download, a paused one resumed) changes the row only
///   while no live lease holds it; one held elsewhere throws `conflict`.
/// - `release` ends a lease once its run stopped and stored its status.
/// - A host's name is its own while it lives (a second live host with its name is refused), so
///   `claim` also takes at once the leases a previous process left under that name.
public protocol SharedQueueStore: DownloadStore {
    /// This host's name in the fleet, as listings show it.
    var host: String { get }
    /// How long a lease lasts without renewal.
    var leaseTimeout: Duration { get }
    /// Claims up to `limit` downloads for this host, in the fleet's order, none of `excluded`
    /// (downloads whose run here is still stopping). A record part of which cannot be read is
    /// returned failed, with why (`markUnreadable`), held all the same: what becomes of it is
    /// the queue's decision (`DownloadQueue.claimed`).
    func claim(limit: Int, excluding excluded: [DownloadID]) async throws -> [DownloadRecord]
    /// Whether this host still holds a lease on the download (as far as it knows).
    func holds(_ id: DownloadID) -> Bool
    /// Renews this host's leases on `held`, recording the live progress given for each.
    func renew(_ held: [DownloadID: Progress?]) async throws -> LeaseReport
    /// Ends this host's lease on a download whose run stopped here.
    func release(_ id: DownloadID) async throws
    /// Pauses or removes a download on whichever host holds it. Applied at once when no live
    /// lease holds it; otherwise left as a command for its holder, which applies it at its next
    /// renewal. Pausing a download that is no longer queued, running or paused (it finished
    /// meanwhile) is a `conflict`.
    func request(_ command: FleetCommand, for id: DownloadID) async throws -> FleetRequestResult
    /// Pauses all of `ids` or none, in one statement (as `request(.pause, for:)` for each):
    /// unless every one exists and is queued, running or paused, nothing changes and the first
    /// that is not is named (`notFound`, `conflict`).
    func pause(_ ids: [DownloadID]) async throws -> [DownloadID: FleetRequestResult]
    /// One element whenever another host may have left a command for this one: the manager
    /// renews (and so hears it) at once instead of at its next renewal.
    var commandNotices: AsyncStream<Void> { get }
    /// Where these downloads run now, for those held by a live lease.
    func runs(_ ids: [DownloadID]) async throws -> [DownloadID: FleetRun]
    /// Drops the stores' connections.
    func close() async
}

/// What one host asks of the host that runs a download.
public enum FleetCommand: String, Sendable, Hashable {
    /// Pause the download: its host stops it as paused (one no host holds is paused at once).
    case pause
    /// Remove the download and its `.part`; a completed file stays on disk (`removeWithFile`
    /// deletes it too).
    case remove
    /// Remove, and delete the completed file too.
    case removeWithFile = "remove-file"
}

/// What a `request` did.
public enum FleetRequestResult: Sendable, Equatable {
    /// No host held the download: changed at once. The record as it is now, and the status it
    /// had before (a removal deletes the final file only if that was `completed`).
    case applied(DownloadRecord, before: DownloadStatus)
    /// Left as a command for the host that holds it.
    case leftForHolder
}

/// What a renewal found.
public struct LeaseReport: Sendable, Equatable {
    /// Leases another host took over (or that vanished): stop without writing.
    public var lost: Set<DownloadID>
    /// Commands other hosts left for downloads this host holds.
    public var commands: [DownloadID: FleetCommand]

    /// A report of `lost` leases and of `commands`; both empty by default.
    public init(lost: Set<DownloadID> = [], commands: [DownloadID: FleetCommand] = [:]) {
        self.lost = lost
        self.commands = commands
    }
}

/// A download running somewhere in the fleet: which host, and its progress as last renewed.
public struct FleetRun: Sendable, Hashable {
    /// The host whose live lease holds the download.
    public var host: String
    /// Its progress as of its host's last renewal; nil when the host gave none.
    public var progress: Progress?

    /// A run on `host`, with `progress`.
    public init(host: String, progress: Progress?) {
        self.host = host
        self.progress = progress
    }
}
