import HaulCore

/// The waiting list and moves within it. As in aria2, the waiting list holds the queued
/// downloads and the paused ones, in the order they would start: a paused download keeps its
/// place (it is skipped until resumed, and `resume` puts it back there), and can be moved like a
/// queued one. Any move is one store write: the download takes a position between its new
/// neighbours (`QueuePlaces.moving`), and only when they leave no room are a few positions
/// around it spread (`QueuePlaces.spread`).
extension DownloadManager {
    /// One entry of the waiting list.
    struct WaitingPlace: Sendable {
        var entry: WaitingQueue.Entry
        var paused: Bool
    }

    /// The queued downloads in the order they will start (this process's queue, in memory).
    public var queuedIDs: [DownloadID] {
        queue.waiting.entries.map(\.id)
    }

    /// Whether this process runs the download now (its run may not have stored `running` yet).
    public func isRunningHere(_ id: DownloadID) -> Bool {
        queue.isRunning(id)
    }

    /// aria2's waiting list: queued and paused downloads in queue order.
    public func waitingIDs() async throws -> [DownloadID] {
        if !queue.holdsWaitingList {
            // The queue is the database's; no host holds it in memory.
            let wanted = Set(try await store.ids(status: .queued) + store.ids(status: .paused))
            return try await store.ids(status: nil).filter(wanted.contains)
        }
        return try await waitingList().map(\.entry.id)
    }

    /// The queued entries (from memory) merged with the paused ones (from the store), in the
    /// order of `WaitingQueue.Entry.runsBefore`; a tie keeps the queued one first.
    func waitingList(adding pausedNew: [WaitingQueue.Entry] = []) async throws -> [WaitingPlace] {
        // Paused ones not saved yet (new in the batch being added) take their places among them.
        let paused = (try await store.places(status: .paused).filter { !isScheduled($0.id) } + pausedNew)
            .sorted { $0.runsBefore($1) }
            .map { WaitingPlace(entry: $0, paused: true) }
        var list: [WaitingPlace] = []
        list.reserveCapacity(queue.waiting.count + paused.count)
        var next = 0
        for queued in queue.waiting.entries {
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
        try await inTurn { [self] in
            let list = try await waitingList()
            let current = try await index(of: id, in: list)
            let target =
                switch move {
                case .up: current - 1
                case .down: current + 1
                case .top: 0
                case .bottom: list.count - 1
                }
            _ = try await place(at: target, from: current, in: list)
            return try await existing(id)
        }
    }

    /// Moves a waiting (queued or paused) download to `index` of the waiting list (0 first;
    /// clamped to the list). Returns the index it ended at.
    @discardableResult
    public func move(_ id: DownloadID, toIndex index: Int) async throws -> Int {
        try await inTurn { [self] in
            let list = try await waitingList()
            return try await place(at: index, from: try await self.index(of: id, in: list), in: list)
        }
    }

    private func index(of id: DownloadID, in list: [WaitingPlace]) async throws -> Int {
        if let refusal = queue.reorderRefusal { throw refusal }
        guard let index = list.firstIndex(where: { $0.entry.id == id }) else {
            let record = try await existing(id)
            throw HaulError(
                .conflict,
                "download \(id) is \(record.status.rawValue); only waiting (queued or paused) downloads can be moved")
        }
        return index
    }

    /// Gives the entry at `current` the place that puts it at `index` (`QueuePlaces.move`: one
    /// write, or a spread first). The waiting list takes the new places before they are stored,
    /// in one step (a slot freed while the write is under way goes to the head the move made); a
    /// failed write puts back the places of those still waiting.
    private func place(at index: Int, from current: Int, in list: [WaitingPlace]) async throws -> Int {
        let before = list.map(\.entry)
        let move = try QueuePlaces.move(in: before, from: current, to: index)
        try await setPlaces(move.changed, before: before)
        return move.target
    }

    /// New places for waiting entries: in memory at once, then in the store one by one. When a
    /// write fails, the entries not written yet go back to their places in `before`, so memory
    /// and the store agree.
    func setPlaces(_ entries: [WaitingQueue.Entry], before: [WaitingQueue.Entry]) async throws {
        await perform(queue.placed(entries))
        keepAddsLast(after: entries)
        var written = 0
        do {
            for entry in entries {
                try await store.setPlace(entry.id, priority: entry.priority, position: entry.position)
                written += 1
            }
        } catch {
            // Memory goes back to what the store holds: the places written stay.
            let unwritten = Set(entries[written...].map(\.id))
            await perform(queue.placed(before.filter { unwritten.contains($0.id) }))
            throw error
        }
    }

    /// A spread open at the end may give places past the last add's: the next add still goes after.
    private func keepAddsLast(after entries: [WaitingQueue.Entry]) {
        lastPosition = max(lastPosition, entries.map(\.position).max() ?? lastPosition)
    }

    /// Gives a new download (not yet saved) the place that puts it at `index` of the waiting
    /// list as it stands (the batch's new ones placed before it included), spreading the
    /// positions around it first when its neighbours leave no room. The caller puts it in the list
    /// (`adding`) in the same step.
    /// `excluding`: a download that exists, placed anew (not counted where it stands now).
    func givePlace(
        _ record: inout DownloadRecord, index: Int, fresh: inout [DownloadRecord], excluding: DownloadID? = nil
    ) async throws {
        // The batch's paused ones are in no list yet; a spread may move them.
        func pausedNew() -> [WaitingQueue.Entry] { fresh.filter { $0.status == .paused }.map(WaitingQueue.Entry.init) }
        func currentList() async throws -> [WaitingPlace] {
            try await waitingList(adding: pausedNew()).filter { $0.entry.id != excluding }
        }
        let list = try await currentList().map(\.entry)
        let insertion = try QueuePlaces.insert(WaitingQueue.Entry(record), in: list, at: index)
        // The spread's entries: the batch's own (not in the store yet) take their places in
        // their records and in the list; the others are stored.
        let new = Set(fresh.map(\.id))
        let spread = Dictionary(uniqueKeysWithValues: insertion.spread.map { ($0.id, $0) })
        for offset in fresh.indices {
            guard let entry = spread[fresh[offset].id] else { continue }
            (fresh[offset].request.priority, fresh[offset].position) = (entry.priority, entry.position)
        }
        let unsaved = insertion.spread.filter { new.contains($0.id) }
        await perform(queue.placed(unsaved))
        keepAddsLast(after: unsaved)
        try await setPlaces(
            insertion.spread.filter { !new.contains($0.id) },
            before: list.filter { spread[$0.id] != nil && !new.contains($0.id) })
        if let place = insertion.place { (record.request.priority, record.position) = place }
    }
}
