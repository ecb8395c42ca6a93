/// The queue's scheduling decision and nothing else: which waiting download a slot goes to,
/// and when. Pure: the manager tells it every change to the waiting list, the running runs and
/// the limit, and starts exactly the downloads it answers, in that order.
///
/// The rule, after every event: every slot is taken, or nothing waits, or the head of the
/// waiting list is an add not yet saved; and each slot given went to the head of the waiting
/// list as the list stands after the event, or to a probe asking for one (below) that comes
/// before that head in queue order.
///
/// Requests in flight past the limit (`SlotProbes`): with every slot taken, the head of the list
/// may still be sent without a slot, as a probe, when it may be small and its host has room for
/// another probe. A probe whose response brings more than `SlotProbes.smallLength` bytes asks
/// for a slot (`slotAsked`) and reads nothing more until it has one; it keeps the place it had,
/// so a slot goes to it or to the head of the list, whichever comes first. A small one ends
/// without ever holding a slot. A change to the list is one event, applied whole
/// before any slot is given:
/// - an add takes its place (an `addUri` at a position never passes through the tail) as soon
///   as the place is decided, before its record is saved: a slot freed while the save is under
///   way waits for it rather than go to a download behind it (`adding`, then `saved` or
///   `saveFailed`);
/// - a move or a spread of positions moves every entry it touches at once (a slot freed while
///   a move is being stored goes to the head the move made, not to the one it replaced).
///
/// A digest is an identity: a head whose request names the digest of a file a run of this queue
/// is fetching now (a twin) takes no slot. It is held beside that run (`twins`) until the run
/// ends, then takes its place in the list again, at the place it had: when the run completed,
/// with the twin's file to copy (`copies`: its run checks that file against the digest and links
/// it instead of fetching); when it did not, to fetch the bytes itself.
public struct QueueSlots: Sendable {
    /// The downloads waiting for a slot, in queue order.
    public private(set) var waiting = WaitingQueue()
    /// The runs this queue started that still transfer: each holds a slot.
    public private(set) var running: Set<DownloadID> = []
    /// Runs that let their slot go once every byte was in (`transferEnded`): what is left of
    /// them is the disk's and the store's (verify, publish, the final save), so the next download
    /// transfers meanwhile. Only a finish of at most `shortFinish` bytes lets its slot go so:
    /// a longer one holds it until it ends. At most `finishingLimit` at once: a disk that cannot
    /// keep up holds the queue back instead of piling up finished transfers.
    public private(set) var finishing: Set<DownloadID> = []
    /// Downloads at once (`-j`, aria2's `max-concurrent-downloads`), at least 1.
    public private(set) var limit: Int
    /// After shutdown nothing starts; what waits stays waiting.
    public private(set) var isClosed = false
    /// Added and placed, their records not saved yet: a slot does not go to them, nor past them.
    public private(set) var unsaved: Set<DownloadID> = []
    /// The run fetching each digest now (started by this queue, not ended yet).
    public private(set) var fetching: [Checksum: DownloadID] = [:]
    /// Downloads held while a twin fetches their digest, by that twin: they wait, in no slot.
    public private(set) var twins: [DownloadID: [WaitingQueue.Entry]] = [:]
    /// Waiting downloads whose twin completed: the path of its file, which their run copies.
    public private(set) var copies: [DownloadID: String] = [:]
    /// The runs sent without a slot, and those of them asking for one (`ProbeRoom`).
    public private(set) var probes: ProbeRoom
    /// Probes given a slot by the last event, for the manager to let through (`takeGrants`).
    private var grants: [DownloadID] = []

    /// A change the manager tells the slots of (`handle`).
    public enum Event: Sendable, Hashable {
        /// Downloads join the waiting list, each at the place it was given (their records are
        /// stored: downloads queued again, or restored at start).
        case added([WaitingQueue.Entry])
        /// New downloads take their places while their records are being saved.
        case adding([WaitingQueue.Entry])
        /// Their records are saved: a slot may go to them.
        case saved([DownloadID])
        /// Their records could not be saved: they leave the list.
        case saveFailed([DownloadID])
        /// Waiting downloads take new places, all at once (a move, and any positions spread to
        /// make room for it). An entry no longer waiting (its run began) is left alone.
        case placed([WaitingQueue.Entry])
        /// Waiting downloads leave the list without running: paused, removed, or taken out to be
        /// queued again with new URLs.
        case left([DownloadID])
        /// A run's transfer ended (every byte in, every connection closed), its finish to go
        /// through `finishBytes` (sync, verify): its slot is free when that is at most
        /// `shortFinish`.
        case transferEnded(DownloadID, finishBytes: Int64)
        /// A run this queue started ended, whatever its outcome; `copy`: the path of its file
        /// when it completed with a known digest (the downloads held for it copy that file).
        case runEnded(DownloadID, copy: String? = nil)
        /// The limit is now this many downloads at once (under 1 counts as 1); a lower one stops no
        /// run.
        case limitChanged(Int)
        /// Shutdown: nothing more starts.
        case closed
        /// A probe's response needs a slot before its body is read (`SlotProbes.needsSlot`): it
        /// gets one now, or waits for one at the place it had.
        case slotAsked(DownloadID)
        /// A host answered over HTTP/2: its probes may be `SlotProbes.http2Limit`.
        case spokeHTTP2(String)
    }

    /// Empty slots for `limit` downloads at once (anything under 1 counts as 1), and
    /// `http1Probes` probes per HTTP/1.1 host.
    public init(limit: Int, http1Probes: Int = 0) {
        self.limit = max(1, limit)
        self.probes = ProbeRoom(http1Limit: http1Probes)
    }

    /// Applies `event`; returns the downloads to start now, in order, each already counted as
    /// running, with the place it had (a run stores it: a move just made may not be stored yet).
    @discardableResult
    public mutating func handle(_ event: Event) -> [WaitingQueue.Entry] {
        switch event {
        case .added(let entries):
            // After shutdown they stay queued in the store for the next start.
            for entry in entries where !isClosed && !running.contains(entry.id) && !isHeld(entry.id) {
                waiting.insert(entry)
            }
        case .adding(let entries):
            for entry in entries where !isClosed && !running.contains(entry.id) && !isHeld(entry.id) {
                waiting.insert(entry)
                unsaved.insert(entry.id)
            }
        case .saved(let ids):
            unsaved.subtract(ids)
        case .saveFailed(let ids):
            for id in ids where unsaved.remove(id) != nil { waiting.remove(id) }
        case .placed(let entries):
            for entry in entries { place(entry) }
        case .left(let ids):
            for id in ids {
                waiting.remove(id)
                unsaved.remove(id)
                release(id)
            }
        case .transferEnded(let id, let finishBytes):
            if finishBytes <= Self.shortFinish, running.remove(id) != nil { finishing.insert(id) }
        case .runEnded(let id, let copy):
            running.remove(id)
            finishing.remove(id)
            probes.end(id)
            if let digest = fetching.first(where: { $0.value == id })?.key { fetching[digest] = nil }
            for entry in twins.removeValue(forKey: id) ?? [] {
                waiting.insert(entry)
                copies[entry.id] = copy
            }
        case .limitChanged(let count):
            limit = max(1, count)
        case .closed:
            isClosed = true
        case .slotAsked(let id):
            probes.ask(id)
        case .spokeHTTP2(let host):
            probes.spokeHTTP2(host)
        }
        return fill()
    }

    /// The probes given a slot since the last call, in order, taken once: their runs read their
    /// bodies now.
    public mutating func takeGrants() -> [DownloadID] {
        defer { grants = [] }
        return grants
    }

    /// Empties the waiting list (shutdown, pause-all): returns what waited, those held for a
    /// twin included, in order.
    public mutating func takeWaiting() -> [WaitingQueue.Entry] {
        unsaved = []
        copies = [:]
        let held = twins.values.joined()
        twins = [:]
        return (waiting.removeAll() + held).sorted { $0.runsBefore($1) }
    }

    /// Whether `id` waits, in the list or held while a twin fetches its digest.
    public func isWaiting(_ id: DownloadID) -> Bool { waiting.contains(id) || isHeld(id) }

    /// Whether `id` is held while a twin fetches its digest.
    public func isHeld(_ id: DownloadID) -> Bool { heldEntry(id) != nil }

    /// The place of `id` while it is held for a twin; nil when it is not.
    public func heldEntry(_ id: DownloadID) -> WaitingQueue.Entry? {
        for held in twins.values { if let entry = held.first(where: { $0.id == id }) { return entry } }
        return nil
    }

    /// The file a starting download copies (its twin's, which completed), taken once.
    public mutating func takeCopy(_ id: DownloadID) -> String? { copies.removeValue(forKey: id) }

    /// A waiting or held download takes a new place; its digest stays.
    private mutating func place(_ entry: WaitingQueue.Entry) {
        if waiting.replacePlace(with: entry) { return }
        for (twin, held) in twins {
            guard let index = held.firstIndex(where: { $0.id == entry.id }) else { continue }
            twins[twin]?[index].priority = entry.priority
            twins[twin]?[index].position = entry.position
        }
    }

    /// `id` no longer waits for a twin, nor for its copy.
    private mutating func release(_ id: DownloadID) {
        copies[id] = nil
        for (twin, held) in twins where held.contains(where: { $0.id == id }) {
            twins[twin] = held.filter { $0.id != id }
            if twins[twin]?.isEmpty == true { twins[twin] = nil }
        }
    }

    /// The most bytes a run's finish may go through (sync, verify) for its slot to go to the next
    /// download once every byte is in. What is left of a run then is the disk's: fsync of the bytes not yet durable, verification,
    /// publish, the final save. For a small file that is milliseconds, and many small files
    /// transfer while the earlier ones finish. For a large one it is seconds (a GiB to fsync and
    /// verify), during which aria2 and its front-ends count it active, as it is: a front-end that
    /// queues its next download at the head once one completes must find that download given the
    /// slot the completion frees, not find the slot given at the transfer's end to a download from
    /// behind (issue 45: a ring of 1 GiB downloads behind slow ones stalled for good).
    public static let shortFinish: Int64 = 16 << 20

    /// Finishing runs at once: as many as slots, and at least 16 (small files finish by the
    /// dozen while one `-j 1` transfer runs).
    public var finishingLimit: Int { max(limit, 16) }

    /// Gives every free slot to whichever comes first, a probe asking for one or the head of the
    /// list; then, with the slots taken, sends the heads that may go without one as probes, while
    /// their hosts have room.
    private mutating func fill() -> [WaitingQueue.Entry] {
        var starts: [WaitingQueue.Entry] = []
        while !isClosed, running.count < limit, finishing.count < finishingLimit {
            let head = waiting.first
            if let asker = probes.asking.first, head.map({ asker.runsBefore($0) }) ?? true {
                probes.end(asker.id)
                running.insert(asker.id)
                grants.append(asker.id)
                continue
            }
            guard let head, !unsaved.contains(head.id) else { break }
            _ = waiting.removeFirst()
            if let start = begin(head) {
                running.insert(head.id)
                starts.append(start)
            }
        }
        while !isClosed, let head = waiting.first, !unsaved.contains(head.id), probes.hasRoom(for: head) {
            _ = waiting.removeFirst()
            if let start = begin(head) {
                probes.sent(start)
                starts.append(start)
            }
        }
        return starts
    }

    /// The head taken from the list starts, or is held while a twin fetches its digest (nil).
    private mutating func begin(_ head: WaitingQueue.Entry) -> WaitingQueue.Entry? {
        // A download with its twin's file to copy fetches nothing: it is no one's twin.
        let copying = copies[head.id] != nil
        if !copying, let digest = head.digest, let twin = fetching[digest] {
            twins[twin, default: []].append(head)
            return nil
        }
        if !copying, let digest = head.digest { fetching[digest] = head.id }
        return head
    }
}
