/// The downloads waiting for a slot, in queue order (higher priority first, then lower
/// position, then id: `QueueOrder`), with an index by id: with ten thousand waiting, "is it
/// already queued?" must not be a scan.
public struct WaitingQueue: Sendable {
    /// A waiting download's place.
    public struct Entry: Sendable, Hashable {
        /// The waiting download.
        public var id: DownloadID
        /// Its priority: a higher one runs first.
        public var priority: Int
        /// Its place among the downloads of its priority: a lower one runs first.
        public var position: Int64
        /// The digest its whole file must have, when its request names one: two downloads of
        /// one digest are fetched once (`QueueSlots`). Not part of its place: a move keeps it.
        public var digest: Checksum?
        /// The host it may be sent to without a slot (`SlotProbes`): nil when what it is known
        /// to bring is large. Not part of its place: a move keeps it.
        public var probeHost: String?

        /// A place given outright; `digest`: the one its file must have, if known; `probeHost`:
        /// the host it may be sent to without a slot.
        public init(
            id: DownloadID, priority: Int, position: Int64, digest: Checksum? = nil, probeHost: String? = nil
        ) {
            (self.id, self.priority, self.position, self.digest) = (id, priority, position, digest)
            self.probeHost = probeHost
        }

        /// The place `record` has: its request's priority and its position, and the digest its
        /// request names for the whole file, when that digest names content (SHA-256, SHA-512)
        /// and the file's name is known (a copy needs it before any request); none for a
        /// `--range` download: its file is a slice.
        public init(_ record: DownloadRecord) {
            self.init(
                id: record.id, priority: record.request.priority, position: record.position,
                digest: record.request.range == nil && record.fileName != nil
                    && record.request.checksum?.algorithm.identifiesContent == true ? record.request.checksum : nil,
                probeHost: SlotProbes.host(of: record))
        }

        /// Whether this entry comes before `other` in queue order (`QueueOrder.runsBefore`).
        public func runsBefore(_ other: Entry) -> Bool {
            QueueOrder.runsBefore((priority, position, id), (other.priority, other.position, other.id))
        }
    }

    /// Entries before `head` are gone: taking the first is O(1), not a shift of the whole
    /// array (with 100,000 waiting, that shift per start cost seconds).
    private var storage: [Entry] = []
    private var head = 0
    private var ids: Set<DownloadID> = []

    /// An empty list.
    public init() {}

    /// Whether nothing waits.
    public var isEmpty: Bool { head == storage.count }
    /// How many downloads wait.
    public var count: Int { storage.count - head }
    /// The download a free slot goes to.
    public var first: Entry? { isEmpty ? nil : storage[head] }

    /// Whether `id` waits here; a lookup, not a scan.
    public func contains(_ id: DownloadID) -> Bool { ids.contains(id) }

    /// The entry of `id`, or nil when it does not wait; found by a scan.
    public func entry(_ id: DownloadID) -> Entry? { index(of: id).map { self[$0] } }

    /// The index of `id` in the list (0: the head), or nil when it does not wait; found by a scan.
    public func index(of id: DownloadID) -> Int? {
        guard ids.contains(id), let found = storage[head...].firstIndex(where: { $0.id == id }) else { return nil }
        return found - head
    }

    /// The entry at `index` (0: the head), which must be within the list.
    public subscript(index: Int) -> Entry { storage[head + index] }

    /// Every entry, in order.
    public var entries: ArraySlice<Entry> { storage[head...] }

    /// Inserts in order. Inserting an id already here replaces its entry (it takes the new place).
    public mutating func insert(_ entry: Entry) {
        if ids.contains(entry.id) { remove(entry.id) }
        var low = head
        var high = storage.count
        if let last = storage.last, head < storage.count, !entry.runsBefore(last) {
            low = high // the common case: the newest goes last
        }
        while low < high {
            let middle = (low + high) / 2
            if entry.runsBefore(storage[middle]) { high = middle } else { low = middle + 1 }
        }
        storage.insert(entry, at: low)
        ids.insert(entry.id)
    }

    /// `entry`'s download takes `entry`'s priority and position; its digest and probe host stay
    /// (a move does not change what its file must be). False when it does not wait here.
    @discardableResult
    public mutating func replacePlace(with entry: Entry) -> Bool {
        guard let old = self.entry(entry.id) else { return false }
        insert(
            Entry(
                id: entry.id, priority: entry.priority, position: entry.position, digest: old.digest,
                probeHost: old.probeHost))
        return true
    }

    /// Takes the head of the list and returns it; the list must not be empty.
    public mutating func removeFirst() -> Entry {
        let entry = storage[head]
        head += 1
        ids.remove(entry.id)
        if head > 1024, head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return entry
    }

    /// Takes `id` out of the list; returns its entry, or nil when it did not wait.
    @discardableResult
    public mutating func remove(_ id: DownloadID) -> Entry? {
        guard let index = index(of: id) else { return nil }
        ids.remove(id)
        return storage.remove(at: head + index)
    }

    /// Empties the queue, returning what was in it.
    public mutating func removeAll() -> [Entry] {
        defer {
            storage = []
            head = 0
            ids = []
        }
        return Array(storage[head...])
    }
}
