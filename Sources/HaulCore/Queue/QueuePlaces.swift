/// Where a download goes in the waiting list, as arithmetic on the list as it stands (queued
/// and paused entries in queue order): the place between its new neighbours that puts it at an
/// index, one write (`moving`, `inserting`), and, only when they leave no room, positions spread
/// evenly over a few entries around that index (`spread`).
public enum QueuePlaces {
    /// A waiting download's place in the list.
    public typealias Entry = WaitingQueue.Entry
    /// A priority and a position: what a move or an insertion stores for the download.
    public typealias Place = (priority: Int, position: Int64)

    /// The least distance between the positions of downloads added one after another, and the
    /// least a spread leaves between neighbours.
    public static let gap: Int64 = 64

    /// The priority and position that put the entry at `current` at `target` (both indices of
    /// the list as it is), between the neighbours it will have there, taking their priority as
    /// moving past them one by one would; nil when no position lies strictly between them.
    public static func moving(in list: [Entry], from current: Int, to target: Int) -> Place? {
        // Indices in the list without the moved entry.
        func other(_ index: Int) -> Entry? {
            let index = index < current ? index : index + 1
            return index >= 0 && index < list.count && index != current ? list[index] : nil
        }
        let previous = target > 0 ? other(target - 1) : nil
        let next = other(target)
        if target > current, let previous {
            guard let next, next.priority == previous.priority else {
                return (previous.priority, previous.position + 1)
            }
            return between(previous.position, next.position).map { (previous.priority, $0) }
        }
        guard let next else { return nil }
        guard let previous, previous.priority == next.priority else { return (next.priority, next.position - 1) }
        return between(previous.position, next.position).map { (next.priority, $0) }
    }

    /// A move of the entry at `current` to `index` (clamped to the list), as the places to store:
    /// the entries a spread moved first (when the new neighbours leave no room), then the moved
    /// entry; none when it is there already. Throws when even a spread leaves no room.
    public static func move(in list: [Entry], from current: Int, to index: Int) throws(HaulError)
        -> (target: Int, changed: [Entry])
    {
        let target = min(max(0, index), list.count - 1)
        if target == current { return (current, []) }
        var list = list
        var changed: [Entry] = []
        var place = moving(in: list, from: current, to: target)
        if place == nil {
            // No room between the new neighbours (adjacent positions): spread the few around
            // them, then the move is one write again.
            let spread = spread(list, around: target)
            for index in spread.changed { list[index] = spread.list[index] }
            changed = spread.changed.map { spread.list[$0] }
            place = moving(in: list, from: current, to: target)
        }
        guard let place else {
            throw HaulError(
                .store,
                "no queue position is left between downloads \(list[max(0, target - 1)].id) and \(list[target].id)")
        }
        var moved = list[current]
        (moved.priority, moved.position) = place
        changed.removeAll { $0.id == moved.id }
        return (target, changed + [moved])
    }

    /// An insertion of a new entry at `index` (clamped to the list) as the places to store: the
    /// entries a spread moved first (when the new neighbours leave no room), and the new entry's
    /// place (nil: its own place puts it there already). Throws when even a spread leaves none.
    public static func insert(_ entry: Entry, in list: [Entry], at index: Int) throws(HaulError)
        -> (spread: [Entry], place: Place?)
    {
        let target = min(max(0, index), list.count)
        var answer = inserting(entry, in: list, at: target)
        var spreadEntries: [Entry] = []
        if answer == .noRoom {
            let spread = spread(list, around: target)
            spreadEntries = spread.changed.map { spread.list[$0] }
            answer = inserting(entry, in: spread.list, at: target)
        }
        switch answer {
        case .keep: return (spreadEntries, nil)
        case .place(let priority, let position): return (spreadEntries, (priority, position))
        case .noRoom: throw HaulError(.store, "no queue position is left at index \(target)")
        }
    }

    /// What puts a new entry at `index` of `list` (aria2's `addUri` at a position): as if it
    /// were last and moved there. `.keep` when its own place is last anyway, `.noRoom` when its
    /// new neighbours leave no room (spread first).
    public static func inserting(_ entry: Entry, in list: [Entry], at index: Int) -> Insertion {
        let target = min(max(0, index), list.count)
        if target == list.count {
            // Last: its own place, unless that is ahead of the last one (of a lower priority,
            // or a position given by a move); then right after it, in its priority.
            guard let last = list.last, entry.runsBefore(last) else { return .keep }
            return .place(last.priority, last.position + 1)
        }
        return moving(in: list + [entry], from: list.count, to: target).map { .place($0.priority, $0.position) }
            ?? .noRoom
    }

    /// What puts a new entry at an index (`inserting`).
    public enum Insertion: Sendable, Hashable {
        /// Its own place puts it there already (last): nothing changes.
        case keep
        /// Give it this priority and position.
        case place(Int, Int64)
        /// No position lies between its new neighbours: `spread` the list around the index first,
        /// then ask again.
        case noRoom
    }

    /// Makes room around `index`: the smallest window of entries of its priority around it whose
    /// outer neighbours leave at least `gap` between each gets positions evenly spread between
    /// them (a window at either end of its priority is open on that side). The window doubles
    /// until it fits, so repeated moves to one place cost a few writes each, not one per waiting
    /// download. Returns the list with its new positions and the indices that changed.
    public static func spread(_ list: [Entry], around index: Int) -> (list: [Entry], changed: Range<Int>) {
        guard !list.isEmpty else { return (list, 0..<0) }
        let center = min(max(0, index), list.count - 1)
        let priority = list[center].priority
        var runStart = center
        var runEnd = center + 1
        while runStart > 0, list[runStart - 1].priority == priority { runStart -= 1 }
        while runEnd < list.count, list[runEnd].priority == priority { runEnd += 1 }
        var half = 4
        while true {
            let low = max(runStart, center - half)
            let high = min(runEnd, center + half + 1)
            let slots = Int64(high - low + 1)
            let below = low > runStart ? list[low - 1].position : list[low].position - slots * gap * 16
            let above = high < runEnd ? list[high].position : list[high - 1].position + slots * gap * 16
            let step = (above - below) / slots
            if step >= gap || (low == runStart && high == runEnd) {
                var list = list
                for index in low..<high {
                    list[index].position = below + Int64(index - low + 1) * step
                }
                return (list, low..<high)
            }
            half *= 2
        }
    }

    /// A position strictly between two, nil when they are adjacent.
    public static func between(_ low: Int64, _ high: Int64) -> Int64? {
        high - low >= 2 ? low + (high - low) / 2 : nil
    }
}

/// Where an added download goes: paused from the start (aria2's `pause`), and at an index of the
/// waiting list (aria2's position; nil: the end of its priority). Both are decided in the add's
/// own step, before any slot can be given.
public struct AddPlacement: Sendable, Hashable {
    /// Saved paused, without joining the queue (aria2's `pause`).
    public var startsPaused: Bool
    /// Its index in the waiting list (0: the head); nil: the end of its priority.
    public var index: Int?

    /// A placement; by default queued at the end of its priority.
    public init(startsPaused: Bool = false, index: Int? = nil) {
        self.startsPaused = startsPaused
        self.index = index
    }

    /// Neither paused nor at an index: what an ordinary add does.
    public var isDefault: Bool { !startsPaused && index == nil }
}

extension DownloadRecord {
    /// This record at `place` (its request's priority and its position); unchanged for nil (its
    /// own place puts it where it goes, `QueuePlaces.insert`).
    public func placed(at place: QueuePlaces.Place?) -> DownloadRecord {
        guard let place else { return self }
        var record = self
        (record.request.priority, record.position) = place
        return record
    }
}
