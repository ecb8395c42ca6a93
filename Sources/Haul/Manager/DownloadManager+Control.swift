import HaulCore
import Logging

// Pause, resume, cancel and remove: one download or many, here or on another host of a fleet.
extension DownloadManager {
    /// Stops a running download at a checkpoint, or takes a queued one out of the queue; it
    /// stays paused, across restarts too, until resumed. Pausing a finished download is a conflict.
    public func pause(_ id: DownloadID) async throws {
        try await pause([id])
    }

    /// Pauses these downloads, all or none: every id is checked and every change made in one
    /// step of the queue, so a download that finishes meanwhile cannot leave half of them
    /// paused. Returns once the running ones have checkpointed (an API answer then shows them
    /// paused). Already paused ones count and stay paused.
    @discardableResult
    public func pause(_ ids: [DownloadID]) async throws -> Int {
        let work = try await inTurn { [self] in
            var records: [(id: DownloadID, status: DownloadStatus)] = []
            for id in ids { records.append((id, try await existing(id).status)) }
            defer { signalIdleIfNeeded() }
            return try await performCalling(queue.pausing(records))
        }
        // The running ones checkpoint; one another host holds is answered once that host
        // applied it, and one that has not in time refuses the call.
        try await finish(work)
        return ids.count
    }

    /// Puts a paused or failed download back in the queue at its old place; a queued or
    /// running one is left alone. Resuming a completed download is a conflict.
    public func resume(_ id: DownloadID) async throws {
        try await resume([id])
    }

    /// Resumes these downloads, all or none (see `pause(_:)`). Returns how many it was given.
    @discardableResult
    public func resume(_ ids: [DownloadID]) async throws -> Int {
        try await inTurn { [self] in
            var records: [DownloadRecord] = []
            for id in ids { records.append(try await existing(id)) }
            _ = try await performCalling(queue.resuming(records))
            return ids.count
        }
    }

    /// Stops the download and deletes its partial data; the record is kept as removed.
    public func cancel(_ id: DownloadID) async throws {
        try await remove(id, deleteFile: false)
    }

    /// Stops the download if it runs, deletes its `.part`, and the completed file too when
    /// `deleteFile` is true. The queue is not held while a running download stops (a remove
    /// interrupts even a long checksum verification).
    public func remove(_ id: DownloadID, deleteFile: Bool) async throws {
        let work = try await inTurn { [self] in
            _ = try await existing(id)
            return try await performCalling(queue.removing(id, deleteFile: deleteFile))
        }
        try await finish(work)
    }

    /// Removes a download whose run has stopped (`.removeHere`), as the queue decides
    /// (`removingNow`). One started again while the queue was free is stopped too: its end is
    /// returned, for the caller to wait for outside the loop (which settles it) and call again
    /// with `stoppedAgain`.
    func removeNow(_ id: DownloadID, deleteFile: Bool, runnerStopped: Bool, stoppedAgain: Bool) async throws
        -> [Completion]
    {
        let record = try await existingOrRemoved(id)
        let work = try await performCalling(
            queue.removingNow(record, deleteFile: deleteFile, runnerStopped: runnerStopped, stoppedAgain: stoppedAgain))
        signalIdleIfNeeded()
        return work.stopping
    }

    /// Deletes a removed download's `.part`, and its final file when `final` (`.deleteFiles`).
    /// Through its directory resolved beneath the roots, on the shared thread pool (the download
    /// has no run, hence no threads of its own). A failure is logged: the record is removed
    /// anyway, and a file that could not be deleted stays where it is.
    nonisolated func removeFiles(of record: DownloadRecord, final: Bool) async {
        let roots = configuration.downloadRoots
        do {
            try await BlockingIO.run { try DestinationFiles.remove(record, final: final, roots: roots) }
        } catch {
            configuration.logger.warning(
                "cannot delete the removed download's files",
                metadata: [
                    "id": "\(record.id)", "error": "\(error)",
                ])
        }
    }

    /// Queues `records` again, their error cleared: saved in one transaction, then scheduled.
    func requeue(_ records: [DownloadRecord]) async throws {
        let queued = records.map { record in
            var record = record
            record.status = .queued
            record.error = nil
            return record
        }
        try await store.save(queued)
        await enqueue(queued)
    }
}
