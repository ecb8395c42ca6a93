/// The queue's decisions, as `DownloadStateMachine` holds one download's: a value with no I/O
/// that the manager (`Haul/Manager`) tells every event and whose actions it carries out, in
/// order. Which download a slot goes to, when a run starts and how it is stopped, what a pause,
/// a remove or a shutdown does to a waiting or a running download, what a run's end settles,
/// what a fleet host claims, and what a renewal's report changes: all of it is here, and a test
/// drives it with plain values (`DownloadQueueTests`).
///
/// Every download the queue knows has one `Entry`, by id: its state (waiting, running with its
/// generation and any stop asked, suspended, or idle) and what its request gave that the store
/// may not keep (`GivenOptions`: credentials, `-N`). No other map keeps per-download facts.
///
/// The backend is chosen once, as AsyncHTTPClient's pool holds `http1` or `http2`:
/// - `.local`: this process's queue, in memory (`QueueSlots`: the waiting list, its slots, and
///   adds not yet saved);
/// - `.fleet`: one host of a fleet; the queue is the database's and a free slot is filled by a
///   claim, and the host's clock (renewals, the outage, other hosts' answers) is its own
///   (`FleetBackend`); downloads stopped by an outage are held as suspended.
public struct DownloadQueue: Sendable {
    /// Where the queue lives, chosen once when the queue is made: this process's memory, or a
    /// fleet's database.
    public enum Backend: Sendable {
        /// This process's queue: the waiting list and its slots, in memory.
        case local(QueueSlots)
        /// One host of a fleet: the queue is the database's, and a free slot is filled by a claim.
        case fleet(FleetBackend)
    }

    /// One run of a download in this process.
    public struct Run: Sendable, Hashable {
        /// Which start this is: only the end of this start clears it (a run ended late after a
        /// new start must not free the new one's slot).
        public var generation: UInt64
        /// What the run was asked to end as (paused, removed, or running for a shutdown); nil
        /// while nobody asked.
        public var stop: DownloadStatus?
        /// Resumed while it stopped as paused: picked up again (`.readd`) once it ends paused.
        public var resumeAfterStop = false

        /// A run of start `generation`; `stop`: what it was asked to end as (nil: nothing asked
        /// yet).
        public init(generation: UInt64, stop: DownloadStatus? = nil) {
            self.generation = generation
            self.stop = stop
        }
    }

    /// Where a download stands in this process.
    public enum State: Sendable, Hashable {
        /// Not scheduled here; known for what its request gave (a paused download keeps its
        /// credentials for when it is resumed).
        case idle
        /// In the waiting list (local backend), at this place.
        case waiting(WaitingQueue.Entry)
        /// Running in this process, as this start (and any stop asked of it).
        case running(Run)
        /// A fleet host holds its lease but stopped it because the database could not be
        /// reached: it starts again here once a renewal proves the lease is still this host's.
        case suspended
    }

    /// What the queue keeps of one download: its run, whether it is suspended, and what its request
    /// gave.
    public struct Entry: Sendable, Hashable {
        /// Its run in this process, until that run ends (asked to stop or not); nil when none runs.
        public var run: Run?
        /// Fleet: held here under its lease but stopped by a database outage; it starts again once
        /// a renewal proves the lease still this host's.
        public var suspended = false
        /// What its requests gave that the store may not keep (credentials, `-N`, `--remote-time`),
        /// applied to each of its runs.
        public var given = GivenOptions()
    }

    /// Where the queue lives (`.local` or `.fleet`), fixed when the queue is made.
    public internal(set) var backend: Backend
    /// The downloads with a run, a suspension or given options; waiting ones are in the
    /// backend's list, and have an entry when their request gave anything.
    public internal(set) var entries: [DownloadID: Entry] = [:]
    var generations: UInt64 = 0
    /// After `shutdown()` nothing starts, nothing is claimed, and adds are refused.
    public internal(set) var isShuttingDown = false
    /// What the shutdown settled as queued (it waited): settled once, not again by an add's save.
    var settledAtShutdown: Set<DownloadID> = []
    /// The paused half of this process's waiting list, in queue order: each keeps its place,
    /// skipped by the slots until it is resumed (`waitingList` merges both halves). Empty for a
    /// fleet host, whose list is the database's.
    public internal(set) var paused = WaitingQueue()
    /// New downloads added paused whose records are not saved yet: a failed save takes them out.
    var unsavedPaused: Set<DownloadID> = []
    /// The batch of adds under way, from `addsAsked` to `addsSaved` or `addsFailed` (the
    /// manager's loop carries out one batch at a time).
    var batch: AddBatch?
    /// The last position given to a new download, or taken by a spread: the next new one goes
    /// after it, at least `QueuePlaces.gap` later.
    var lastPosition: Int64 = 0
    /// The unfinished groups this process knows, by id and by member (`DownloadQueue+Groups`).
    var groupBook = GroupBook()

    /// A queue on `backend`, with nothing scheduled yet.
    public init(_ backend: Backend) {
        self.backend = backend
    }

    /// A queue of this process, `limit` downloads at once.
    public static func local(limit: Int, http1Probes: Int = 0) -> DownloadQueue {
        DownloadQueue(.local(QueueSlots(limit: limit, http1Probes: http1Probes)))
    }

    /// One host of a fleet, `limit` downloads at once, renewing its leases of `leaseTimeout` every
    /// `renewInterval` (at most a quarter of the lease).
    public static func fleet(
        limit: Int, renewInterval: Duration = .seconds(1), leaseTimeout: Duration = .seconds(30)
    ) -> DownloadQueue {
        DownloadQueue(.fleet(FleetBackend(limit: limit, renewInterval: renewInterval, leaseTimeout: leaseTimeout)))
    }

    /// Whether this is one host of a fleet (the queue is the database's) rather than this process's
    /// own queue.
    public var isFleet: Bool {
        if case .fleet = backend { return true }
        return false
    }

    // MARK: Reads

    /// Where `id` stands in this process: running (with its run), suspended, waiting (with its
    /// place), or idle when it is none of these.
    public func state(of id: DownloadID) -> State {
        if let entry = entries[id] {
            if let run = entry.run { return .running(run) }
            if entry.suspended { return .suspended }
        }
        if case .local(let slots) = backend {
            if let index = slots.waiting.index(of: id) { return .waiting(slots.waiting[index]) }
            if let held = slots.heldEntry(id) { return .waiting(held) }
        }
        return .idle
    }

    /// Running or waiting in this process (in a fleet: held here, running or suspended).
    public func isScheduled(_ id: DownloadID) -> Bool {
        if let entry = entries[id], entry.run != nil || entry.suspended { return true }
        if case .local(let slots) = backend { return slots.isWaiting(id) }
        return false
    }

    /// Whether `id` has a run in this process: from its start until `runEnded`, asked to stop or
    /// not.
    public func isRunning(_ id: DownloadID) -> Bool { entries[id]?.run != nil }

    /// How many downloads have a run in this process, those past their transfer that still verify,
    /// publish or save included.
    public var runCount: Int { entries.values.count { $0.run != nil } }

    /// The downloads running here, in one order (by id), for actions on all of them.
    var runningIDs: [DownloadID] {
        entries.compactMap { $0.value.run == nil ? nil : $0.key }.sorted { $0.rawValue < $1.rawValue }
    }

    /// A fleet host holds downloads stopped by an outage: its next turn renews, due or not.
    public var holdsSuspended: Bool { entries.values.contains(where: \.suspended) }

    /// The waiting list, in the order a slot goes to it (empty for a fleet host: the queue is
    /// the database's).
    public var waiting: WaitingQueue {
        if case .local(let slots) = backend { return slots.waiting }
        return WaitingQueue()
    }

    /// Downloads run at once (`-j`): the local slots' limit, or the fleet host's; at least 1.
    public var limit: Int {
        switch backend {
        case .local(let slots): slots.limit
        case .fleet(let slots): slots.limit
        }
    }

    /// Nothing runs, and nothing waits here (a fleet host's suspended downloads wait for the
    /// database, not for this process).
    public var isIdle: Bool {
        guard entries.values.allSatisfy({ $0.run == nil }) else { return false }
        if case .local(let slots) = backend { return slots.waiting.isEmpty && slots.twins.isEmpty }
        return true
    }

    /// What `id`'s requests gave (credentials, `-N`, `--remote-time`); nil when the queue keeps no
    /// entry for it, empty when it has one but nothing was given.
    public func given(_ id: DownloadID) -> GivenOptions? { entries[id]?.given }

    // MARK: Actions

    /// What the manager carries out for the queue, in the order the queue returns them.
    public enum Action: Sendable, Hashable {
        /// Start a run of this download: load its record, apply `given`, and take the place
        /// (a move just made may not be stored yet); report `runEnded` with this generation,
        /// and `transferEnded` when every byte is in. `copy`: the file of a twin that completed
        /// with the digest this download's file must have, to check and link instead of fetching.
        /// `probe`: it holds no slot (`SlotProbes`); a response that needs one asks for it
        /// (`slotAsked`) and waits for `grantSlot` before its body is read.
        case startRun(
            DownloadID, generation: UInt64, place: WaitingQueue.Entry?, given: GivenOptions?, copy: String? = nil,
            probe: Bool = false)
        /// A probe of this run's (`startRun` with `probe`, `SlotProbes`) that waited for a slot has
        /// one: its body may be read now.
        case grantSlot(DownloadID)
        /// Ask this run to stop at a checkpoint, its record ending as this status.
        case stopRun(DownloadID, as: DownloadStatus)
        /// Another host holds the download now: stop writing at once, no checkpoint.
        case abandonRun(DownloadID)
        /// The current run of the download has returned: what the manager held for it goes
        /// (a stale run's end, of an earlier generation, changes nothing).
        case dropRun(DownloadID)
        /// Save a re-added record that took its place in the list before its save: then
        /// `readdSaved`, or `saveFailed` (the caller's answer is the failure).
        case saveReadd(DownloadRecord)
        /// Publish this event to whoever follows the downloads.
        case publish(DownloadEvent)
        /// Tell whoever waits for the download that it left this process's schedule.
        case settle(DownloadOutcome)
        /// Its name is guarded by the store's record from now on (`FileNameClaims`).
        case releaseName(directory: String, name: String?)
        /// Save these waiting downloads as paused (taken out of the list already); then
        /// `pausedSaved` with their records.
        case savePaused([DownloadID])
        /// Store these places, one write each, in order (the list took them already); a failed
        /// write is the caller's answer, after `placesFailed` with the entries of `restore`
        /// (their places before) not written yet.
        case storePlaces([WaitingQueue.Entry], restore: [WaitingQueue.Entry])
        /// Check a re-add's name again (its file went: it starts over under a checked name);
        /// then `readdNameChecked` with `then`.
        case checkName(DownloadRecord, then: ReaddStep)
        /// Read the stored records of a batch of adds by identity; then `addsLookedUp`.
        case lookUpAdds([DownloadRequest])
        /// Read what holds these requests' explicit names (by offset in the batch): the disk,
        /// and the record of the download holding each; then `namesRead` with the holders.
        case readNames([Int: DownloadRequest])
        /// The download of the batch's request at `offset` is `id`: whoever follows that request
        /// hears of it from now on (aria2's `followedBy`), before anything about it is published.
        case follow(offset: Int, DownloadID)
        /// Make the record of a new download (a new id, its explicit name checked against the
        /// names read), with this status; then `newMade`.
        case makeNew(DownloadRequest, status: DownloadStatus, offset: Int)
        /// Every request of the batch was carried out: ask for what to save (`addsCarriedOut`).
        case saveAdds
        /// Save the batch's new records together; then `addsSaved` (a failure is the caller's,
        /// after `addsFailed`).
        case saveNew([DownloadRecord])
        /// Read the groups not finished (at start), then `groupsRead`.
        case readGroups
        /// Fleet: read the groups this completed download belongs to, then `memberGroupsRead`.
        case readGroupsOf(DownloadID)
        /// Read the records of this group's members, then `membersRead`.
        case readMembers(DownloadGroup)
        /// Write this group's finish into its directory (on a file thread), then `finishWritten`,
        /// or `finishFailed` with why.
        case writeFinish(DownloadGroup)
        /// Store this group as it is (a failure is the caller's, or logged).
        case saveGroup(DownloadGroup)
        /// Delete this group (its add failed before its downloads were saved).
        case deleteGroup(GroupID)
        /// The answer to the batch's callers: one record per request, in order, and the offsets
        /// whose placement is carried out after the batch (paused or moved as `pause` and `move`
        /// do).
        case answerAdds([DownloadRecord], placedAfter: [Int])
        /// Move the download to `toIndex` of the waiting list once its pause is done (after the
        /// caller's turn: `moving`, asked again, for an add's placement).
        case moveAfterPause(DownloadID, toIndex: Int)
        /// Wait for the download's run to return (after the caller's turn), without asking it
        /// to stop.
        case awaitRun(DownloadID)
        /// Forget the download's record once its run returned (`forgetting`, asked again after
        /// the caller's turn).
        case forgetAfterRun(DownloadID)
        /// Delete the removed download's `.part`, and its final file when `final` (a failure is
        /// logged: the record is removed anyway).
        case deleteFiles(DownloadRecord, final: Bool)
        /// This rate limit (nil: none) applies to the download's run at once, if it runs.
        case applyRate(DownloadID, Int64?)
        /// Fleet: end this host's lease of the download.
        case releaseLease(DownloadID)
        /// Fleet: store this claimed record as it is (failed, with why: it cannot be run).
        case storeFailed(DownloadRecord)
        /// Fleet: claim up to `limit` downloads, none of `excluding`; report `claimed`.
        case claim(limit: Int, excluding: Set<DownloadID>)
        /// Fleet: look for work soon (something was queued, or a slot freed).
        case wakeClaims
        /// Fleet: carry out a remove another host asked for a download running here.
        case removeForAnotherHost(DownloadID, deleteFile: Bool)
        /// At start: read the records the last process left queued or running, and report them
        /// `queued`.
        case restoreQueued
        /// Fleet: start the loop that renews this host's leases, hears other hosts' commands
        /// and claims work for free slots; it wakes every `every` (and when woken) and tells the
        /// queue `tick(now:)`. Sent once.
        case startClaiming(every: Duration)
        /// Fleet: renew every lease held here, with live progress; report `renewed(_:now:)`, or
        /// `renewalFailed(now:)` when the database does not answer.
        case renewLeases
        /// A caller's change is refused with this error, before anything changed: its answer.
        case refuse(HaulError)
        /// Store this record as it is (a change a caller asked for); a failure is the caller's.
        case saveRecord(DownloadRecord)
        /// Delete these finished downloads' records; a failure is the caller's.
        case deleteRecords([DownloadID])
        /// Pick this download up with `request` as an add does: read its completed file, then
        /// `readdAsked` (`offset`: the request's place in the batch under way, which hears the
        /// answer; nil for a resume).
        case readd(
            DownloadRecord, request: DownloadRequest, placement: AddPlacement = AddPlacement(), offset: Int? = nil)
        /// Fleet: queue these again in one transaction, their errors cleared, all or none.
        case requeue([DownloadRecord])
        /// Fleet: pause these downloads in one statement of the shared store, wherever they run;
        /// report its results to `fleetPaused`.
        case pauseEverywhere([DownloadID])
        /// Fleet: pause every download queued or running on any host: list them from the store,
        /// then pause them as `pausing` does (again when one finished between the two).
        case pauseAllEverywhere
        /// Fleet: the caller waits (after its turn) until the host holding this download carries
        /// out the command (`remoteAsked`, `remoteSeen`).
        case awaitRemote(DownloadID, FleetCommand)
        /// Fleet: remove this download, which does not run here, through the shared store: at
        /// once when no host holds it, else by a command for its host, which the caller waits for.
        case removeThroughHost(DownloadID, FleetCommand)
        /// Remove this download here, once its run (if `runnerStopped`, asked to stop as removed
        /// just before) has stopped: its files, its name, its record saved removed (`removed`).
        case removeHere(DownloadID, deleteFile: Bool, runnerStopped: Bool)
        /// Fleet: the pause or remove asked of another host (`remoteAsked`) happened, or the
        /// download finished meanwhile: its caller is answered with the record.
        case remoteAnswered(FleetBackend.RemoteAsk)
        /// Fleet: the host holding the download did not carry out the pause or remove in time:
        /// its caller is refused with this error (the command stays stored for that host).
        case remoteRefused(FleetBackend.RemoteAsk, HaulError)
    }

    // MARK: Shared steps

    @discardableResult
    mutating func withLocal<T>(_ body: (inout QueueSlots) -> T) -> T? {
        guard case .local(var slots) = backend else { return nil }
        backend = .local(QueueSlots(limit: 1)) // keeps `slots` unique while it changes
        defer { backend = .local(slots) }
        return body(&slots)
    }

    @discardableResult
    mutating func withFleet<T>(_ body: (inout FleetBackend) -> T) -> T? {
        guard case .fleet(var slots) = backend else { return nil }
        defer { backend = .fleet(slots) }
        return body(&slots)
    }

    /// Tells the local slots of a change and starts each download they give a slot to; a fleet
    /// host looks for work instead.
    mutating func schedule(_ change: QueueSlots.Event) -> [Action] {
        // Queued again and stored so (resumed, re-added, restored): it leaves the paused half of
        // the list. A re-add still being saved is in both (`waitingList` shows it queued): a
        // failed save leaves it paused, as its record still is.
        if case .added(let entries) = change { for entry in entries { paused.remove(entry.id) } }
        if case .saved(let ids) = change { for id in ids { paused.remove(id) } }
        let decided = withLocal { slots in
            let starts = slots.handle(change).map {
                (place: $0, copy: slots.takeCopy($0.id), probe: slots.probes.isProbing($0.id))
            }
            return (starts: starts, grants: slots.takeGrants())
        }
        guard let decided else { return [.wakeClaims] }
        return decided.grants.map { .grantSlot($0) }
            + decided.starts.map { begin($0.place.id, place: $0.place, copy: $0.copy, probe: $0.probe) }
    }

    /// A new run of `id`: a new generation, recorded in its entry; `copy`: a twin's file to copy;
    /// `probe`: it starts without a slot.
    mutating func begin(_ id: DownloadID, place: WaitingQueue.Entry?, copy: String? = nil, probe: Bool = false)
        -> Action
    {
        generations += 1
        entries[id, default: Entry()].run = Run(generation: generations)
        entries[id]?.suspended = false
        let given = entries[id]?.given
        return .startRun(
            id, generation: generations, place: place, given: given == GivenOptions() ? nil : given, copy: copy,
            probe: probe)
    }

    /// Drops an entry that holds nothing any more.
    mutating func tidy(_ id: DownloadID) {
        if let entry = entries[id], entry.run == nil, !entry.suspended, entry.given == GivenOptions() {
            entries[id] = nil
        }
    }
}
