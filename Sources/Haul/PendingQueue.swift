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
            priority != other.priority ? priority > other.priority : position < other.position
        }
    }

    private(set) var entries: [Entry] = []
    private var ids: Set<DownloadID> = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    func contains(_ id: DownloadID) -> Bool { ids.contains(id) }

    func index(of id: DownloadID) -> Int? {
        ids.contains(id) ? entries.firstIndex { $0.id == id } : nil
    }

    subscript(index: Int) -> Entry { entries[index] }

    /// Inserts in order (after equals, so equal keys keep their arrival order).
    mutating func insert(_ entry: Entry) {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entry.runsBefore(entries[middle]) { high = middle } else { low = middle + 1 }
        }
        entries.insert(entry, at: low)
        ids.insert(entry.id)
    }

    mutating func removeFirst() -> Entry {
        let entry = entries.removeFirst()
        ids.remove(entry.id)
        return entry
    }

    @discardableResult
    mutating func remove(_ id: DownloadID) -> Entry? {
        guard let index = index(of: id) else { return nil }
        ids.remove(id)
        return entries.remove(at: index)
    }

    /// Empties the queue, returning what was in it.
    mutating func removeAll() -> [Entry] {
        defer {
            entries = []
            ids = []
        }
        return entries
    }

    /// Replaces an entry's place: used by moves, which only swap or shift keys.
    mutating func replace(at index: Int, with entry: Entry) {
        entries[index] = entry
    }
}
