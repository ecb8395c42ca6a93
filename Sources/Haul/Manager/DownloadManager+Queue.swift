import HaulCore

/// Operations on many downloads at once, finished results, and live figures: what a daemon with
/// thousands of entries needs to stay quick (one store write per batch, not per download).
extension DownloadManager {
    /// Adds many downloads; the new ones are saved together. Returns one record per request,
    /// in order; a request for a download that already exists gets the existing record (see
    /// `add(_:)`), and the same request twice in one batch is one download.
    ///
    /// Adds that arrive while another queue change is made wait together in the manager's inbox
    /// and are added as one batch (`submitAdd`): eight clients adding one download each cost one transaction and
    /// one fsync, not eight, and each caller still returns only once its own are committed.
    public func add(_ requests: [DownloadRequest]) async throws -> [DownloadRecord] {
        try await add(requests, placements: requests.map { _ in AddPlacement() })
    }

    /// Adds many downloads, each where its placement says (`placements[i]` for `requests[i]`):
    /// a new download is saved paused or with the place that puts it at its index, and joins
    /// the waiting list there in the same step, so no slot is given while it is anywhere else.
    /// A download that already exists and is not scheduled here is picked up as `add(_:)` does,
    /// saved paused or at its index in the same step; one running or waiting here is paused or
    /// moved after. One that cannot take its index (complete) is a conflict, and one that a free
    /// slot started at once has no place to take.
    public func add(_ requests: [DownloadRequest], placements: [AddPlacement]) async throws -> [DownloadRecord] {
        try await add(requests, placements: placements, following: nil)
    }

    /// Adds the downloads of a name of content as one group (`DownloadGroup`: its members are
    /// these requests' downloads, in order), saved with them; once every member completed, the
    /// group's finish is written, after a restart too. Returns one record per request.
    public func add(_ requests: [DownloadRequest], group: DownloadGroup) async throws -> [DownloadRecord] {
        try await add(
            requests, placements: requests.map { _ in AddPlacement() },
            groups: [.init(group, offsets: 0..<requests.count)])
    }

    /// Adds many downloads, each where its placement says, and the groups they make (each of the
    /// requests at its offsets), saved with them (`add(_:group:)`).
    public func add(
        _ requests: [DownloadRequest], placements: [AddPlacement], groups: [DownloadQueue.GroupAsk]
    ) async throws -> [DownloadRecord] {
        try await add(requests, placements: placements, following: nil, groups: groups)
    }

    /// The same; each download's id goes into `following` as soon as the add decides it,
    /// before anything about it is published (`addFollowing`).
    func add(
        _ requests: [DownloadRequest], placements: [AddPlacement], following: FollowedIDs?,
        groups: [DownloadQueue.GroupAsk] = []
    ) async throws -> [DownloadRecord] {
        try queue.checkAdds(requests, placements: placements, groups: groups)
        let (records, existing) = try await submitAdd(
            AddBatch(requests: requests, placements: placements, following: following, groups: groups))
        // Each one's placement, whatever became of the others'; the first failure is the answer.
        var failure: (any Error)?
        for offset in existing {
            do {
                try await place(existing: records[offset].id, placements[offset])
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return records
    }

    /// A download that existed before its add: one that was not scheduled here was saved paused
    /// or placed in the add's own step (`DownloadQueue.readdAsked`); one running or waiting here is
    /// paused now, then moved to its index, as the queue says (`placingAfterAdd`).
    private func place(existing id: DownloadID, _ placement: AddPlacement) async throws {
        try await finish(
            try await inTurn { [self] in try await performCalling(queue.placingAfterAdd(existing(id), placement)) })
    }

    /// One caller's adds, waiting in the manager's inbox (`submitAdd`).
    struct AddBatch: Sendable {
        var requests: [DownloadRequest]
        var placements: [AddPlacement]
        var following: FollowedIDs?
        /// The groups these requests' downloads make, at offsets of `requests`.
        var groups: [DownloadQueue.GroupAsk] = []
    }

    /// The records of one caller's adds, and the offsets of those whose placement is carried out
    /// after the batch.
    typealias AddedBatch = ([DownloadRecord], [Int])

    /// Adds what waited in the line as one batch: one answer per caller. (When it fails, the
    /// line tries each caller's alone, so one caller's bad request, a name already taken, fails
    /// only that caller, as it would have without the line.)
    func addTogether(_ batches: [AddBatch]) async throws -> [AddedBatch] {
        var groups: [DownloadQueue.GroupAsk] = []
        var start = 0
        for batch in batches {
            groups += batch.groups.map { $0.shifted(by: start) }
            start += batch.requests.count
        }
        let (records, existing) = try await addNow(
            batches.flatMap(\.requests), placements: batches.flatMap(\.placements),
            following: batches.flatMap { batch in batch.requests.map { _ in batch.following } }, groups: groups)
        var answers: [AddedBatch] = []
        start = 0
        for batch in batches {
            let range = start..<start + batch.requests.count
            answers.append((Array(records[range]), existing.filter(range.contains).map { $0 - start }))
            start += batch.requests.count
        }
        return answers
    }

    /// One batch of adds, as one queue change (one message of the manager's loop): the queue
    /// decides it step by step (`DownloadQueue.addsAsked`, and the reads and records it asks
    /// for); this carries its actions out. `following[i]`: where `requests[i]`'s download's id
    /// goes once decided. When a step fails, nothing new was saved: the queue takes the new ones
    /// back (`addsFailed`).
    private func addNow(
        _ requests: [DownloadRequest], placements: [AddPlacement], following: [FollowedIDs?],
        groups: [DownloadQueue.GroupAsk]
    ) async throws -> AddedBatch {
        var work = CallerWork(following: following)
        do {
            for action in queue.addsAsked(requests, placements: placements, groups: groups) {
                try await perform(action, for: &work)
            }
        } catch {
            await perform(queue.addsFailed())
            throw error
        }
        return work.added
    }

    /// The downloads holding the explicit names of `requests` (by offset in the batch), read with
    /// the names' disk and store state (`facts`).
    func holders(of requests: [Int: DownloadRequest], facts: FileNameClaims.Facts) async throws -> [Int: DownloadRecord]
    {
        let ids = requests.compactMapValues(facts.holder(of:))
        let records = try await store.records(Array(Set(ids.values)))
        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return ids.compactMapValues { byID[$0] }
    }

    /// Pauses every download that is queued or running here. Returns how many it paused, once
    /// the running ones have checkpointed.
    @discardableResult
    public func pauseAll() async throws -> Int {
        let (count, work) = try await inTurn { [self] in
            // Decided from memory, in one step: a queued entry cannot start once it is out of
            // the waiting list, so its stored record is not being written by anyone else.
            let actions = queue.pausingAll()
            defer { signalIdleIfNeeded() }
            return (actions.pausedCount, try await performCalling(actions))
        }
        return count + (try await finish(work))
    }

    /// The fleet's pause of everything: every download queued or running on any host, in one
    /// statement. One that finished between the listing and the statement refuses it: list
    /// again (three tries).
    func pauseEverywhere() async throws -> Int {
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

    /// Puts every paused download back in the queue, in its old order. Returns how many.
    @discardableResult
    public func resumeAll() async throws -> Int {
        try await inTurn { [self] in
            let paused = try await store.records(status: .paused).filter { !isScheduled($0.id) }
            try await requeue(paused)
            return paused.count
        }
    }

    /// Deletes the record of a finished download (completed, failed or removed), leaving its
    /// file alone: aria2's `removeDownloadResult`. Anything else is a conflict.
    public func forget(_ id: DownloadID) async throws {
        // A run that stored its end but has not returned yet is waited for, then asked again.
        try await finish(
            try await inTurn { [self] in try await performCalling(queue.forgetting(existingOrRemoved(id))) })
    }

    /// Deletes the records of every finished download (aria2's `purgeDownloadResult`). Returns how many.
    @discardableResult
    public func forgetFinished() async throws -> Int {
        try await inTurn { [self] in
            var finished: [DownloadID] = []
            for status in [DownloadStatus.completed, .failed, .removed] {
                finished += try await store.ids(status: status)
            }
            let actions = queue.forgettingFinished(finished)
            _ = try await performCalling(actions)
            return actions.deletedCount
        }
    }

    /// Changes how many connections a download may use, a fixed count from now on; a running
    /// one keeps its connections until its next start.
    public func setConnections(_ connections: Int, for id: DownloadID) async throws {
        try Limits.check(connections, in: Limits.connections, field: "connections", code: .usage)
        _ = try await inTurn { [self] in
            try await performCalling(queue.changingConnections(existing(id), to: connections))
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

    /// How many records the store holds of each status (removed ones included), the running
    /// downloads' combined speed in bytes per second, and the current limit on downloads at once.
    public func summary() async throws -> QueueSummary {
        QueueSummary(
            counts: try await store.counts(),
            downloadSpeed: live.all().values.reduce(0) { $0 + $1.bytesPerSecond },
            maxConcurrentDownloads: queue.limit)
    }
}
