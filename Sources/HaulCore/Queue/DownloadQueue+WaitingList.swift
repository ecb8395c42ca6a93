/// The waiting list, whole: as in aria2, it holds the queued downloads and the paused ones, in
/// the order they would start. A paused download keeps its place (the slots skip it until it is
/// resumed, and `resume` puts it back there) and can be moved like a queued one. The queue holds
/// both halves (`waiting`, `paused`); a move is decided here and taken in memory at once, then
/// stored (`.storePlaces`): one write, the download between its new neighbours
/// (`QueuePlaces.move`), and only when they leave no room a few positions around it spread
/// first. A fleet host holds no list: the database's rows are its queue.
extension DownloadQueue {
    /// One entry of the waiting list.
    public struct WaitingPlace: Sendable, Hashable {
        /// Its id, place and digest.
        public var entry: WaitingQueue.Entry
        /// Whether it is paused (skipped by the slots) rather than queued.
        public var paused: Bool
    }

    /// The queued and the paused entries in one list, in the order of
    /// `WaitingQueue.Entry.runsBefore`; a tie keeps the queued one first. A re-add still being
    /// saved is listed queued only.
    public var waitingList: [WaitingPlace] {
        let queued = waiting
        let paused = self.paused.entries.filter { !queued.contains($0.id) }
        var list: [WaitingPlace] = []
        list.reserveCapacity(queued.count + paused.count)
        var next = paused.startIndex
        for entry in queued.entries {
            while next < paused.endIndex, paused[next].runsBefore(entry) {
                list.append(WaitingPlace(entry: paused[next], paused: true))
                next += 1
            }
            list.append(WaitingPlace(entry: entry, paused: false))
        }
        list += paused[next...].map { WaitingPlace(entry: $0, paused: true) }
        return list
    }

    /// The index of the waiting list a move of `id` one place, or to either end, aims at; nil
    /// when `id` does not wait.
    public func waitingIndex(of id: DownloadID, after move: QueueMove) -> Int? {
        let list = waitingList
        guard let current = list.firstIndex(where: { $0.entry.id == id }) else { return nil }
        return switch move {
        case .up: current - 1
        case .down: current + 1
        case .top: 0
        case .bottom: list.count - 1
        }
    }

    /// Moves `record`'s download to `index` of the waiting list (clamped to it): refused in a
    /// fleet, or for a download that does not wait (queued or paused); else its new place (and
    /// any spread) is taken at once and stored (`.storePlaces`). Nothing when it is there already.
    /// `afterAdd`: the placement of an add of a download that existed, carried out after the
    /// add's batch; one that a free slot started meanwhile has no place to take, and that is no
    /// refusal.
    public mutating func moving(_ record: DownloadRecord, toIndex index: Int, afterAdd: Bool = false) -> [Action] {
        if let refusal = reorderRefusal { return [.refuse(refusal)] }
        let list = waitingList.map(\.entry)
        guard let current = list.firstIndex(where: { $0.id == record.id }) else {
            if afterAdd, isRunning(record.id) || record.status == .running { return [] }
            return [
                .refuse(
                    HaulError(
                        .conflict,
                        "download \(record.id) is \(record.status.rawValue); only waiting (queued or paused) downloads can be moved"
                    ))
            ]
        }
        do {
            return placing(try QueuePlaces.move(in: list, from: current, to: index).changed, before: list)
        } catch {
            return [.refuse(error)]
        }
    }

    /// The placement of an add of `record`'s download, which existed and was running or waiting
    /// here (`placedAfter`), carried out after the add's batch as `pause` and `move` would: paused
    /// first when asked (`pausing`), then moved to its index once the pause is done
    /// (`.moveAfterPause`, after the caller's turn: a run stops paused first), or at once.
    public mutating func placingAfterAdd(_ record: DownloadRecord, _ placement: AddPlacement) -> [Action] {
        guard placement.startsPaused else {
            return placement.index.map { moving(record, toIndex: $0, afterAdd: true) } ?? []
        }
        return pausing([(record.id, record.status)])
            + (placement.index.map { [.moveAfterPause(record.id, toIndex: $0)] } ?? [])
    }

    /// Waiting entries take the places in `changed` at once (a slot freed while they are stored
    /// goes to the head they made); those not in `unsaved` (downloads of an add whose records
    /// are saved with their places) are then stored, each put back at its place in `before` if
    /// its write is not made.
    public mutating func placing(
        _ changed: [WaitingQueue.Entry], unsaved: Set<DownloadID> = [], before: [WaitingQueue.Entry]
    ) -> [Action] {
        // A spread open at the end may give places past the last new one's: the next still goes after.
        lastPosition = max(lastPosition, changed.map(\.position).max() ?? lastPosition)
        let stored = changed.filter { !unsaved.contains($0.id) }
        let ids = Set(stored.map(\.id))
        let restore = before.filter { ids.contains($0.id) }
        return placed(changed) + (stored.isEmpty ? [] : [.storePlaces(stored, restore: restore)])
    }

    /// Some of a move's places were not stored: `restore`, the places the entries not written
    /// had, are theirs again, so memory and the store agree.
    public mutating func placesFailed(_ restore: [WaitingQueue.Entry]) -> [Action] {
        placed(restore)
    }
}
