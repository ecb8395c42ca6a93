import HaulCore

// Reading records (running ones from memory) and the manager's limits: rates and downloads at once.
extension DownloadManager {
    /// Changes the whole manager's rate limit, at once for running downloads too. Nil, or a
    /// rate under one byte per second (aria2's 0), means no limit.
    public func setMaxBytesPerSecond(_ rate: Int64?) {
        globalLimiter.setRate(rate.flatMap(ByteRate.limit))
    }

    /// Changes one download's rate limit, stored and, if it runs, applied at once.
    public func setMaxBytesPerSecond(_ rate: Int64?, for id: DownloadID) async throws {
        _ = try await inTurn { [self] in try await performCalling(queue.changingRate(existing(id), to: rate)) }
    }

    /// The record: a running download's from memory (as its run last stored it), others' from
    /// the store.
    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        if let running = live.record(id) { return running }
        return try await store.record(id)
    }

    /// Ids in queue order: with that status, or (nil) every status but removed.
    public func ids(status: DownloadStatus?) async throws -> [DownloadID] {
        try await store.ids(status: status)
    }

    /// These records in the order of `ids`; ids removed meanwhile are skipped.
    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        try await live.records(ids) { [store] in try await store.records($0) }
    }

    /// The record of a download that exists and was not removed; throws `notFound` otherwise.
    public func download(_ id: DownloadID) async throws -> DownloadRecord {
        try await existing(id)
    }

    /// Every stored record with `status`, or (nil) every stored record, removed ones included, in
    /// queue order. Read from the store only: a running download's is as its last checkpoint
    /// left it (`record(_:)` and `records(_:)` give the fresher one).
    public func records(status: DownloadStatus? = nil) async throws -> [DownloadRecord] {
        try await store.records(status: status)
    }

    /// How many downloads may run at once in this process (on this host, in a fleet): the
    /// configuration's until `setMaxConcurrentDownloads(_:)` changes it, never less than 1.
    public var maxConcurrentDownloads: Int { queue.limit }

    /// More slots go to the head of the queue at once; fewer let running downloads finish.
    public func setMaxConcurrentDownloads(_ count: Int) async {
        await perform(queue.limitChanged(count))
    }
}
