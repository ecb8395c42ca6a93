import HaulCore

/// The downloads waiting for a slot, in queue order (higher priority first, then lower
/// position), with an index by id: with ten thousand waiting, "is it already queued?" must not
/// be a scan.
struct PendingQueue {
    struct Entry: Sendable {
        var id: DownloadID
        var priority: Int
        var position: Int64

        init(_ record: DownloadRecord) {
            (id, priority, position) = (record.id, record.request.priority, record.position)
        }

        func runsBefore(_ other: Entry) -> Bool {
            QueueOrder.runsBefore((priority, position, id), (other.priority, other.position, other.id))
        }
    }

    /// Entries before `head` are gone: taking the first is O(1), not a shift of the whole
    /// array (with 100,000 waiting, that shift per start cost seconds).
    private var storage: [Entry] = []
    private var head = 0
    private var ids: Set<DownloadID> = []

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    func contains(_ id: DownloadID) -> Bool { ids.contains(id) }

    func index(of id: DownloadID) -> Int? {
        guard ids.contains(id), let found = storage[head...].firstIndex(where: { $0.id == id }) else { return nil }
        return found - head
    }

    subscript(index: Int) -> Entry { storage[head + index] }

    /// Inserts in order (after equals, so equal keys keep their arrival order).
    mutating func insert(_ entry: Entry) {
        var low = head, high = storage.count
        if let last = storage.last, !entry.runsBefore(last) {
            low = high  // the common case: the newest goes last
        }
        while low < high {
            let middle = (low + high) / 2
            if entry.runsBefore(storage[middle]) { high = middle } else { low = middle + 1 }
        }
        storage.insert(entry, at: low)
        ids.insert(entry.id)
    }

    mutating func removeFirst() -> Entry {
        let entry = storage[head]
        head += 1
        ids.remove(entry.id)
        if head > 1024, head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return entry
    }

    @discardableResult
    mutating func remove(_ id: DownloadID) -> Entry? {
        guard let index = index(of: id) else { return nil }
        ids.remove(id)
        return storage.remove(at: head + index)
    }

    /// Empties the queue, returning what was in it.
    mutating func removeAll() -> [Entry] {
        defer {
            storage = []
            head = 0
            ids = []
        }
        return Array(storage[head...])
    }

    /// Replaces an entry's place: used by moves, which only swap or shift keys.
    mutating func replace(at index: Int, with entry: Entry) {
        storage[head + index] = entry
    }
}
