import HaulCore

/// Operations on many downloads at once, finished results, and live figures: what a daemon with
/// thousands of entries needs to stay quick (one store write per batch, not per download).
extension DownloadManager {
    /// Adds many downloads; the new ones are saved together. Returns one record per request,
    /// in order; a request for a download that already exists gets the existing record (see
    /// `add(_:)`), and the same request twice in one batch is one download.
    ///
    /// Adds that arrive while another is being saved wait in one line and are added together
    /// (`drainAdds`): eight clients adding one download each cost one transaction and one
    /// fsync, not eight, and each caller still returns only once its own are committed.
    public func add(_ requests: [DownloadRequest]) async throws -> [DownloadRecord] {
        for request in requests where !request.directory.hasPrefix("/") {
            throw HaulError(.usage, "destination directory must be an absolute path: \(request.directory)")
        }
        if requests.isEmpty { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            addLine.append(WaitingAdd(requests: requests, continuation: continuation))
            if !addsDraining {
                addsDraining = true
                // An unstructured task: the line is drained whoever of its callers is cancelled.
                Task { await self.drainAdds() }
            }
        }
    }

    /// One caller's adds, waiting in the line.
    struct WaitingAdd {
        var requests: [DownloadRequest]
        var continuation: CheckedContinuation<[DownloadRecord], any Error>
    }

    /// Adds everything waiting in the line as one batch. When that fails, each caller's batch is
    /// tried alone, so one caller's bad request (a name already taken) fails only that caller,
    /// as it would have without the line.
    func drainAdds() async {
        while !addLine.isEmpty {
            let waiting = addLine
            addLine = []
            do {
                let records = try await addNow(waiting.flatMap(\.requests))
                var start = 0
                for add in waiting {
                    add.continuation.resume(returning: Array(records[start..<start + add.requests.count]))
                    start += add.requests.count
                }
            } catch {
                if waiting.count == 1 {
                    waiting[0].continuation.resume(throwing: error)
                    continue
                }
                for add in waiting {
                    do {
                        add.continuation.resume(returning: try await addNow(add.requests))
                    } catch {
                        add.continuation.resume(throwing: error)
                    }
                }
            }
        }
        addsDraining = false
    }

    /// One batch of adds, as one queue change.
    private func addNow(_ requests: [DownloadRequest]) async throws -> [DownloadRecord] {
        try await serialized {
            // Nothing added now would ever start or settle.
            if isShuttingDown { throw HaulError(.interrupted, "the download manager is shutting down") }
            var results: [DownloadRecord] = []
            var fresh: [DownloadRecord] = []
            var byIdentity: [String: DownloadRecord] = [:]
            do {
                let known = try await store.records(matching: requests)
                // The explicit names' disk and store state, read once for the batch.
                let facts = try await names.facts(for: requests.filter { known[$0.identity] == nil })
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
                    } else if let existing = try await sameDestination(as: request, facts: facts) {
                        // The same `-o` with another URL: the download goes on from its bytes.
                        let renewed = Self.withNewSources(existing, request: request)
                        give(request, to: existing.id)
                        try await store.save(renewed)
                        record = try await readd(renewed, request: request)
                    } else {
                        record = try await newRecord(for: request, facts: facts)
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
            let paused = try await store.records(status: .paused).filter { !isScheduled($0.id) }
            try await requeue(paused)
            return paused.count
        }
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
