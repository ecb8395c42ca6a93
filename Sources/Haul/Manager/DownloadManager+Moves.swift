import HaulCore

/// The waiting list and moves within it: the queue holds the list, queued and paused halves
/// (`DownloadQueue.waitingList`), and decides each move (`DownloadQueue.moving`); the manager
/// stores the places it answers (`.storePlaces`).
extension DownloadManager {
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
        return queue.waitingList.map(\.entry.id)
    }

    /// Moves a waiting download one place, or to either end.
    @discardableResult
    public func move(_ id: DownloadID, _ move: QueueMove) async throws -> DownloadRecord {
        try await inTurn { [self] in
            let record = try await existing(id)
            _ = try await place(record, at: queue.waitingIndex(of: id, after: move) ?? 0)
            return try await existing(id)
        }
    }

    /// Moves a waiting (queued or paused) download to `index` of the waiting list (0 first;
    /// clamped to the list). Returns the index it ended at.
    @discardableResult
    public func move(_ id: DownloadID, toIndex index: Int) async throws -> Int {
        try await inTurn { [self] in try await place(try await existing(id), at: index) }
    }

    /// Moves `record`'s download to `index`, as the queue decides; returns where it stands after.
    private func place(_ record: DownloadRecord, at index: Int) async throws -> Int {
        _ = try await performCalling(queue.moving(record, toIndex: index))
        return queue.waitingList.firstIndex { $0.entry.id == record.id } ?? index
    }

    /// Stores places the waiting list took already, one write each (`.storePlaces`). When a write
    /// fails, the entries not written yet go back to their places in `restore`, so memory and
    /// the store agree.
    func storePlaces(_ entries: [WaitingQueue.Entry], restore: [WaitingQueue.Entry]) async throws {
        var written = 0
        do {
            for entry in entries {
                try await store.setPlace(entry.id, priority: entry.priority, position: entry.position)
                written += 1
            }
        } catch {
            // Memory goes back to what the store holds: the places written stay.
            let unwritten = Set(entries[written...].map(\.id))
            await perform(queue.placesFailed(restore.filter { unwritten.contains($0.id) }))
            throw error
        }
    }
}
