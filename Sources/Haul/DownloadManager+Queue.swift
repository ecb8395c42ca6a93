import HaulCore

/// Operations on many downloads at once, queue order, and live figures: what a daemon with
/// thousands of entries needs to stay quick (one store write per batch, not per download).
extension DownloadManager {
    /// Adds many downloads; the new ones are saved together. Returns one record per request,
    /// in order; a request for a download that already exists gets the existing record (see
    /// `add(_:)`), and the same request twice in one batch is one download.
    public func add(_ requests: [DownloadRequest]) async throws -> [DownloadRecord] {
        for request in requests where !request.directory.hasPrefix("/") {
            throw HaulError(.usage, "destination directory must be an absolute path: \(request.directory)")
        }
        return try await serialized {
            // Nothing added now would ever start or settle.
            if isShuttingDown { throw HaulError(.interrupted, "the download manager is shutting down") }
            var results: [DownloadRecord] = []
            var fresh: [DownloadRecord] = []
            var byIdentity: [String: DownloadRecord] = [:]
            do {
                let known = try await store.records(matching: requests)
                for request in requests {
                    if let seen = byIdentity[request.identity] {
                        results.append(seen)
                        continue
                    }
                    let record: DownloadRecord
                    if let existing = known[request.identity] {
                        // Before readd: it may start the run at once, which takes them.
                        give(request, to: existing.id)
                        record = try await readd(existing, request: request)
                    } else if let existing = try await sameDestination(as: request) {
                        // The same `-o` with another URL: the download goes on from its bytes.
                        let renewed = Self.withNewSources(existing, request: request)
                        give(request, to: existing.id)
                        try await store.save(renewed)
                        record = try await readd(renewed, request: request)
                    } else {
                        record = try await newRecord(for: request)
                        fresh.append(record)
                    }
                    byIdentity[request.identity] = record
                    results.append(record)
                    give(request, to: record.id)
                }
                try await store.save(fresh)
            } catch {
                // Nothing new was saved: give back the names the new records claimed.
                for record in fresh { await names.release(directory: record.request.directory, name: record.fileName) }
                throw error
            }
            for record in fresh { enqueue(record) }
            return results
        }
    }

    /// Pauses every download that is queued or running here. Returns how many it paused, once
    /// the running ones have checkpointed.
    @discardableResult
    public func pauseAll() async throws -> Int {
        if fleet != nil {
            // The fleet's queue: every download queued or running on any host, in one statement.
            // One that finished between the listing and the statement refuses it: list again.
            var attempt = 0
            while true {
                attempt += 1
                let ids = try await store.ids(status: .queued) + store.ids(status: .running)
                do {
                    return try await pause(ids)
                } catch let error as HaulError where error.code == .conflict && attempt < 3 {
                    continue
                }
            }
        }
        let (count, stopping): (Int, [Task<Void, Never>]) = try await serialized {
            // Decided from memory, in one step: a queued entry cannot start once it is out of
            // `pending`, so its stored record is not being written by anyone else.
            let waiting = pending.removeAll().map(\.id)
            var stopping: [Task<Void, Never>] = []
            for running in active.values {
                running.stop.request(.paused)
                stopping.append(running.task)
            }
            var paused = try await store.records(waiting)
            for index in paused.indices { paused[index].status = .paused }
            try await store.save(paused)
            for record in paused {
                hub.publish(DownloadEvent(id: record.id, kind: .paused))
                settle(DownloadOutcome(record))
            }
            signalIdleIfNeeded()
            return (paused.count + stopping.count, stopping)
        }
        for task in stopping { await task.value }
        return count
    }

    /// Puts every paused download back in the queue, in its old order. Returns how many.
    @discardableResult
    public func resumeAll() async throws -> Int {
        try await serialized {
            var resumed: [DownloadRecord] = []
            for var record in try await store.records(status: .paused) where !isScheduled(record.id) {
                record.status = .queued
                record.error = nil
                resumed.append(record)
            }
            try await store.save(resumed)
            for record in resumed { enqueue(record) }
            return resumed.count
        }
    }

    /// Moves a queued download within the queue. Only queued downloads have a place to move.
    @discardableResult
    public func move(_ id: DownloadID, _ move: QueueMove) async throws -> DownloadRecord {
        try await serialized { try await moveNow(id, move) }
    }

    /// Moves a queued download to `index` among the queued ones (0 first; clamped to the
    /// queue), one neighbour at a time so priorities keep their order. Returns where it ended.
    @discardableResult
    public func move(_ id: DownloadID, toIndex index: Int) async throws -> Int {
        try await serialized {
            if fleet != nil {
                throw HaulError(.conflict, "a fleet's queue cannot be reordered yet; add the download again with another priority")
            }
            guard let current = pending.index(of: id) else {
                let record = try await existing(id)
                throw HaulError(.conflict, "download \(id) is \(record.status.rawValue); only queued downloads can be moved")
            }
            let target = min(max(0, index), pending.count - 1)
            if target == current { return current }
            var place = directPlace(from: current, to: target)
            if place == nil {
                // No room between the new neighbours (positions a microsecond apart, or equal):
                // spread the queue's positions once, then the move is one write again.
                try await spreadPositions()
                place = directPlace(from: current, to: target)
            }
            if let place {
                // One write, whatever the distance: the new place lies between its neighbours'.
                var moved = pending.remove(id)!
                (moved.priority, moved.position) = place
                pending.insert(moved)
                try await store.setPlace(id, priority: place.priority, position: place.position)
                return pending.index(of: id) ?? target
            }
            // Cannot happen after the spread; kept as the old, slow way.
            if target == 0, current != 0 {
                _ = try await moveNow(id, .top)
            } else if target == pending.count - 1, current != target {
                _ = try await moveNow(id, .bottom)
            } else {
                for _ in 0..<abs(target - current) { _ = try await moveNow(id, target < current ? .up : .down) }
            }
            return pending.index(of: id) ?? target
        }
    }

    /// The priority and position that put the entry at `current` at `target` (both indices of
    /// the queue as it is), between the neighbours it will have there, taking their priority as
    /// moving past them one by one would; nil when no position lies strictly between them.
    func directPlace(from current: Int, to target: Int) -> (priority: Int, position: Int64)? {
        // Indices in the queue without the moved entry.
        func other(_ index: Int) -> PendingQueue.Entry? {
            let index = index < current ? index : index + 1
            return index >= 0 && index < pending.count && index != current ? pending[index] : nil
        }
        let previous = target > 0 ? other(target - 1) : nil
        let next = other(target)
        if target > current, let previous {
            guard let next, next.priority == previous.priority else { return (previous.priority, previous.position + 1) }
            return Self.between(previous.position, next.position).map { (previous.priority, $0) }
        }
        guard let next else { return nil }
        guard let previous, previous.priority == next.priority else { return (next.priority, next.position - 1) }
        return Self.between(previous.position, next.position).map { (next.priority, $0) }
    }

    /// Gives the queued downloads positions `positionGap * 16` apart in their order (priorities
    /// unchanged), so every gap has room: one write per download, only when a move found none.
    func spreadPositions() async throws {
        guard !pending.isEmpty else { return }
        let base = pending[0].position
        for index in 0..<pending.count {
            var entry = pending[index]
            entry.position = base + Int64(index) * Self.positionGap * 16
            pending.replace(at: index, with: entry)
            try await store.setPlace(entry.id, priority: entry.priority, position: entry.position)
        }
    }

    /// A position strictly between two, nil when they are adjacent.
    static func between(_ low: Int64, _ high: Int64) -> Int64? {
        high - low >= 2 ? low + (high - low) / 2 : nil
    }

    /// The queued downloads in the order they will start (this process's queue, in memory).
    public var queuedIDs: [DownloadID] {
        (0..<pending.count).map { pending[$0].id }
    }

    /// Deletes the record of a finished download (completed, failed or removed), leaving its
    /// file alone: aria2's `removeDownloadResult`. Anything else is a conflict.
    public func forget(_ id: DownloadID) async throws {
        try await serialized {
            guard let record = try await store.record(id) else { throw HaulError(.notFound, "no download with id \(id)") }
            guard record.status.isTerminal, !isScheduled(id) else {
                throw HaulError(.conflict, "download \(id) is \(record.status.rawValue); only finished downloads can be forgotten")
            }
            try await store.delete(id)
        }
    }

    /// Deletes the records of every finished download (aria2's `purgeDownloadResult`). Returns how many.
    @discardableResult
    public func forgetFinished() async throws -> Int {
        try await serialized {
            var count = 0
            for status in [DownloadStatus.completed, .failed, .removed] {
                for id in try await store.ids(status: status) where !isScheduled(id) {
                    try await store.delete(id)
                    count += 1
                }
            }
            return count
        }
    }

    /// Changes how many connections a download may use; a running one keeps its connections
    /// until its next start.
    public func setConnections(_ connections: Int, for id: DownloadID) async throws {
        guard (1...DownloadRequest.maxConnections).contains(connections) else {
            throw HaulError(.usage, "connections must be between 1 and \(DownloadRequest.maxConnections) (got \(connections))")
        }
        try await serialized {
            var record = try await existing(id)
            // Its runner owns a running record: a change now would be overwritten at the next checkpoint.
            guard active[id] == nil else {
                throw HaulError(.conflict, "download \(id) is running; its connections can change while it is paused or queued")
            }
            record.request.connections = connections
            try await store.save(record)
        }
    }

    private func moveNow(_ id: DownloadID, _ move: QueueMove) async throws -> DownloadRecord {
        let record = try await existing(id)
        if fleet != nil {
            throw HaulError(.conflict, "a fleet's queue cannot be reordered yet; add the download again with another priority")
        }
        // Re-read after the await: the queue may have changed meanwhile.
        guard let index = pending.index(of: id) else {
            throw HaulError(.conflict, "download \(id) is \(record.status.rawValue); only queued downloads can be moved")
        }
        var moved = pending.remove(id)!
        var neighbour: PendingQueue.Entry?
        switch move {
        case .up where index > 0, .down where index < pending.count:
            let neighbourIndex = move == .up ? index - 1 : index
            var other = pending[neighbourIndex]
            if other.priority == moved.priority {
                swap(&moved.position, &other.position)
                pending.replace(at: neighbourIndex, with: other)
                neighbour = other
            } else {
                moved.priority = other.priority
                moved.position = other.position + (move == .up ? -1 : 1)
            }
        case .top:
            if !pending.isEmpty, case let first = pending[0] {
                moved.priority = max(moved.priority, first.priority)
                moved.position = first.position - 1
            }
        case .bottom:
            if !pending.isEmpty, case let last = pending[pending.count - 1] {
                moved.priority = min(moved.priority, last.priority)
                moved.position = last.position + 1
            }
        default:
            break  // already first or last
        }
        pending.insert(moved)
        // Only the place changes: a targeted update cannot overwrite a record whose download
        // started meanwhile.
        for entry in [moved] + (neighbour.map { [$0] } ?? []) {
            try await store.setPlace(entry.id, priority: entry.priority, position: entry.position)
        }
        guard let result = try await store.record(id) else { throw HaulError(.notFound, "no download with id \(id)") }
        return result
    }

    /// The live progress of a running download (fresher than its stored checkpoint).
    public nonisolated func liveProgress(_ id: DownloadID) -> Progress? {
        live.progress(id)
    }

    /// The live progress of every download running with bytes flowing.
    public nonisolated func liveProgress() -> [DownloadID: Progress] {
        live.all()
    }

    public func summary() async throws -> QueueSummary {
        QueueSummary(
            counts: try await store.counts(),
            downloadSpeed: live.all().values.reduce(0) { $0 + $1.bytesPerSecond },
            maxConcurrentDownloads: maxConcurrent)
    }
}

extension DownloadManager {
    /// Keeps what a request carries that the store may not (credentials, `-N`, `--remote-time`)
    /// for the runs of download `id`. Called before anything that may start the run.
    func give(_ request: DownloadRequest, to id: DownloadID) {
        if let credentials = request.credentials { secrets[id] = credentials }
        timestampOptions[id] = GivenTimestamps(request)
    }
}
