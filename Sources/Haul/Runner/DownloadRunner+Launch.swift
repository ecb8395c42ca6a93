import HaulCore

/// The life of one start, from the queue's `.startRun` to what became of it.
extension DownloadRunner {
    /// One start of `id`, as the queue gave it (`.startRun`): loads the record (`given`: what
    /// the request gave that the store does not keep; `place`: the place it had in the waiting
    /// list, which a move may not have stored yet), takes the download's cross-process lock for
    /// as long as it runs, and runs it. A record gone or removed, or a lock another process
    /// holds, is a start that did not run.
    func launch(
        _ id: DownloadID, locks: Result<DownloadLocks, HaulError>, given: GivenOptions?, place: WaitingQueue.Entry?
    ) async -> DownloadQueue.RunEnding {
        var record: DownloadRecord
        do {
            guard let stored = try await store.record(id), stored.status != .removed else { return .gone }
            record = stored
            // The latest given win over stored ones (a changed password).
            given?.apply(to: &record.request)
            if let place { (record.request.priority, record.position) = (place.priority, place.position) }
            limiters.first?.setRate(stored.request.maxBytesPerSecond.flatMap(ByteRate.limit))
        } catch {
            return .refused(HaulError.from(error, otherwise: .store))
        }
        let lock: DownloadLocks.Lease
        do {
            guard let acquired = try locks.get().acquire(id) else {
                // Another process runs it: leave its record alone, report, move on.
                return .refused(HaulError(.inUse, "\(record.request.url) is being downloaded by another haul process"))
            }
            lock = acquired
        } catch {
            return .refused(HaulError.from(error, otherwise: .fileSystem))
        }
        defer { withExtendedLifetime(lock) {} }
        let (ended, transfer, notModified) = await runCounting(record)
        return .ran(ended, transfer, notModified: notModified)
    }
}
