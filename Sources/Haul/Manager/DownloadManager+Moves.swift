import HaulCore

/// The waiting list and moves within it. As in aria2, the waiting list holds the queued
/// downloads and the paused ones, in the order they would start: a paused download keeps its
/// place (it is skipped until resumed, and `resume` puts it back there), and can be moved like a
/// queued one. Any move is one store write: the download takes a position between its new
/// neighbours (`directPlace`), and only when they leave no room are a few positions around it
/// spread (`spreadPositions`).
extension DownloadManager {
    /// One entry of the waiting list.
    struct WaitingPlace: Sendable {
        var entry: PendingQueue.Entry
        var paused: Bool
    }

    /// The queued downloads in the order they will start (this process's queue, in memory).
    public var queuedIDs: [DownloadID] {
        (0..<pending.count).map { pending[$0].id }
    }

    /// Whether this process runs the download now (its run may not have stored `running` yet).
    public func isRunningHere(_ id: DownloadID) -> Bool {
        active[id] != nil
    }

    /// aria2's waiting list: queued and paused downloads in queue order.
    public func waitingIDs() async throws -> [DownloadID] {
        if fleet != nil {
            // The queue is the database's; no host holds it in memory.
            let wanted = Set(try await store.ids(status: .queued) + store.ids(status: .paused))
            return try await store.ids(status: nil).filter(wanted.contains)
        }
        return try await waitingList().map(\.entry.id)
    }

    /// The queued entries (from memory) merged with the paused ones (from the store), in the
    /// order of `PendingQueue.Entry.runsBefore`; a tie keeps the queued one first.
    func waitingList() async throws -> [WaitingPlace] {
        let paused = try await store.records(status: .paused).filter { !isScheduled($0.id) }
            .map { WaitingPlace(entry: PendingQueue.Entry($0), paused: true) }
        var list: [WaitingPlace] = []
        list.reserveCapacity(pending.count + paused.count)
        var next = 0
        for index in 0..<pending.count {
            let queued = pending[index]
            while next < paused.count, paused[next].entry.runsBefore(queued) {
                list.append(paused[next])
                next += 1
            }
            list.append(WaitingPlace(entry: queued, paused: false))
        }
        list.append(contentsOf: paused[next...])
        return list
    }

    /// Moves a waiting download one place, or to either end.
    @discardableResult
    public func move(_ id: DownloadID, _ move: QueueMove) async throws -> DownloadRecord {
        try await serialized {
            let list = try await waitingList()
            let current = try await index(of: id, in: list)
            let target = switch move {
            case .up: current - 1
            case .down: current + 1
            case .top: 0
            case .bottom: list.count - 1
            }
            _ = try await place(id, at: target, from: current, in: list)
            return try await existing(id)
        }
    }

    /// Moves a waiting (queued or paused) download to `index` of the waiting list (0 first;
    /// clamped to the list). Returns the index it ended at.
    @discardableResult
    public func move(_ id: DownloadID, toIndex index: Int) async throws -> Int {
        try await serialized {
            let list = try await waitingList()
            return try await place(id, at: index, from: try await self.index(of: id, in: list), in: list)
        }
    }

    private func index(of id: DownloadID, in list: [WaitingPlace]) async throws -> Int {
        if fleet != nil {
            throw HaulError(.conflict, "a fleet's queue cannot be reordered yet; add the download again with another priority")
        }
        guard let index = list.firstIndex(where: { $0.entry.id == id }) else {
            let record = try await existing(id)
            throw HaulError(.conflict, "download \(id) is \(record.status.rawValue); only waiting (queued or paused) downloads can be moved")
        }
        return index
    }

    /// Gives the entry at `current` the place that puts it at `index`: one write, or a spread first.
    private func place(_ id: DownloadID, at index: Int, from current: Int, in list: [WaitingPlace]) async throws -> Int {
        let target = min(max(0, index), list.count - 1)
        if target == current { return current }
        var list = list
        var place = Self.directPlace(in: list, from: current, to: target)
        if place == nil {
            // No room between the new neighbours (adjacent positions): spread the few around
            // them, then the move is one write again.
            list = try await spreadPositions(list, around: target)
            place = Self.directPlace(in: list, from: current, to: target)
        }
        guard let place else {
            throw HaulError(.store, "no queue position is left between downloads \(list[max(0, target - 1)].entry.id) and \(list[target].entry.id)")
        }
        // The store first: a failed write leaves memory as the store has it.
        try await store.setPlace(id, priority: place.priority, position: place.position)
        if var moved = pending.remove(id) {
            (moved.priority, moved.position) = place
            pending.insert(moved)
        }
        return target
    }

    /// The priority and position that put the entry at `current` at `target` (both indices of
    /// the list as it is), between the neighbours it will have there, taking their priority as
    /// moving past them one by one would; nil when no position lies strictly between them.
    static func directPlace(in list: [WaitingPlace], from current: Int, to target: Int) -> (priority: Int, position: Int64)? {
        // Indices in the list without the moved entry.
        func other(_ index: Int) -> PendingQueue.Entry? {
            let index = index < current ? index : index + 1
            return index >= 0 && index < list.count && index != current ? list[index].entry : nil
        }
        let previous = target > 0 ? other(target - 1) : nil
        let next = other(target)
        if target > current, let previous {
            guard let next, next.priority == previous.priority else { return (previous.priority, previous.position + 1) }
            return between(previous.position, next.position).map { (previous.priority, $0) }
        }
        guard let next else { return nil }
        guard let previous, previous.priority == next.priority else { return (next.priority, next.position - 1) }
        return between(previous.position, next.position).map { (next.priority, $0) }
    }

    /// Makes room around `index`: the smallest window of downloads of its priority around it
    /// whose outer neighbours leave at least `positionGap` between each gets positions evenly
    /// spread between them (a window at either end of its priority is open on that side). The
    /// window doubles until it fits, so repeated moves to one place cost a few writes each, not
    /// one per waiting download. Returns the list with its new positions.
    func spreadPositions(_ list: [WaitingPlace], around index: Int) async throws -> [WaitingPlace] {
        guard !list.isEmpty else { return list }
        let center = min(max(0, index), list.count - 1)
        let priority = list[center].entry.priority
        var runStart = center, runEnd = center + 1
        while runStart > 0, list[runStart - 1].entry.priority == priority { runStart -= 1 }
        while runEnd < list.count, list[runEnd].entry.priority == priority { runEnd += 1 }
        var half = 4
        while true {
            let low = max(runStart, center - half), high = min(runEnd, center + half + 1)
            let slots = Int64(high - low + 1)
            let below = low > runStart ? list[low - 1].entry.position : list[low].entry.position - slots * Self.positionGap * 16
            let above = high < runEnd ? list[high].entry.position : list[high - 1].entry.position + slots * Self.positionGap * 16
            let step = (above - below) / slots
            if step >= Self.positionGap || (low == runStart && high == runEnd) {
                var list = list
                for index in low..<high {
                    list[index].entry.position = below + Int64(index - low + 1) * step
                    let entry = list[index].entry
                    try await store.setPlace(entry.id, priority: entry.priority, position: entry.position)
                    if !list[index].paused, let queued = pending.index(of: entry.id) {
                        pending.replace(at: queued, with: entry)
                    }
                }
                return list
            }
            half *= 2
        }
    }

    /// A position strictly between two, nil when they are adjacent.
    static func between(_ low: Int64, _ high: Int64) -> Int64? {
        high - low >= 2 ? low + (high - low) / 2 : nil
    }
}
