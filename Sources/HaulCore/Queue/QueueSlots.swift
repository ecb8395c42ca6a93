/// The queue's scheduling decision and nothing else: which waiting download a slot goes to,
/// and when. Pure: the manager tells it every change to the waiting list, the running runs and
/// the limit, and starts exactly the downloads it answers, in that order.
///
/// The rule, after every event: every slot is taken, or nothing waits, or the head of the
/// waiting list is an add not yet saved; and each slot given went to the head of the waiting
/// list as the list stands after the event. A change to the list is one event, applied whole
/// before any slot is given:
/// - an add takes its place (an `addUri` at a position never passes through the tail) as soon
///   as the place is decided, before its record is saved: a slot freed while the save is under
///   way waits for it rather than go to a download behind it (`adding`, then `saved` or
///   `saveFailed`);
/// - a move or a spread of positions moves every entry it touches at once (a slot freed while
///   a move is being stored goes to the head the move made, not to the one it replaced).
public struct QueueSlots: Sendable {
    /// The downloads waiting for a slot, in queue order.
    public private(set) var waiting = WaitingQueue()
    /// The runs this queue started that still transfer: each holds a slot.
    public private(set) var running: Set<DownloadID> = []
    /// Runs that let their slot go once every byte was in (`transferEnded`): what is left of
    /// them is the disk's and the store's (verify, publish, the final save), so the next download
    /// transfers meanwhile. At most `finishingLimit` at once: a disk that cannot keep up holds
    /// the queue back instead of piling up finished transfers.
    public private(set) var finishing: Set<DownloadID> = []
    /// Downloads at once (`-j`, aria2's `max-concurrent-downloads`), at least 1.
    public private(set) var limit: Int
    /// After shutdown nothing starts; what waits stays waiting.
    public private(set) var isClosed = false
    /// Added and placed, their records not saved yet: a slot does not go to them, nor past them.
    public private(set) var unsaved: Set<DownloadID> = []

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
        /// A run's transfer ended (every byte in, every connection closed): its slot is free.
        case transferEnded(DownloadID)
        /// A run this queue started ended, whatever its outcome.
        case runEnded(DownloadID)
        /// The limit is now this many downloads at once (under 1 counts as 1); a lower one stops no
        /// run.
        case limitChanged(Int)
        /// Shutdown: nothing more starts.
        case closed
    }

    /// Empty slots for `limit` downloads at once; anything under 1 counts as 1.
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Applies `event`; returns the downloads to start now, in order, each already counted as
    /// running, with the place it had (a run stores it: a move just made may not be stored yet).
    @discardableResult
    public mutating func handle(_ event: Event) -> [WaitingQueue.Entry] {
        switch event {
        case .added(let entries):
            // After shutdown they stay queued in the store for the next start.
            for entry in entries where !isClosed && !running.contains(entry.id) { waiting.insert(entry) }
        case .adding(let entries):
            for entry in entries where !isClosed && !running.contains(entry.id) {
                waiting.insert(entry)
                unsaved.insert(entry.id)
            }
        case .saved(let ids):
            unsaved.subtract(ids)
        case .saveFailed(let ids):
            for id in ids where unsaved.remove(id) != nil { waiting.remove(id) }
        case .placed(let entries):
            for entry in entries where waiting.contains(entry.id) { waiting.insert(entry) }
        case .left(let ids):
            for id in ids {
                waiting.remove(id)
                unsaved.remove(id)
            }
        case .transferEnded(let id):
            if running.remove(id) != nil { finishing.insert(id) }
        case .runEnded(let id):
            running.remove(id)
            finishing.remove(id)
        case .limitChanged(let count):
            limit = max(1, count)
        case .closed:
            isClosed = true
        }
        return fill()
    }

    /// Empties the waiting list (shutdown, pause-all): returns what waited, in order.
    public mutating func takeWaiting() -> [WaitingQueue.Entry] {
        unsaved = []
        return waiting.removeAll()
    }

    /// Finishing runs at once: as many as slots, and at least 16 (small files finish by the
    /// dozen while one `-j 1` transfer runs).
    public var finishingLimit: Int { max(limit, 16) }

    private mutating func fill() -> [WaitingQueue.Entry] {
        var starts: [WaitingQueue.Entry] = []
        while !isClosed, running.count < limit, finishing.count < finishingLimit,
            let head = waiting.first, !unsaved.contains(head.id)
        {
            _ = waiting.removeFirst()
            running.insert(head.id)
            starts.append(head)
        }
        return starts
    }
}
