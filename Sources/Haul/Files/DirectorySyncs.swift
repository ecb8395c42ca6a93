import NIOConcurrencyHelpers

/// One fsync of a directory for all the files published into it meanwhile (issue 31,
/// requirement 6: files that finish together share the cost of their durability).
///
/// A publish links its `.part` to the final name, then asks here for the directory's entry to be
/// made durable. Whoever asks while no fsync of that directory runs starts one; whoever asks
/// while one runs waits for the next, which starts once the running one ends and covers every
/// link made before it began. So each caller returns only after an fsync that started after its
/// own link (DESIGN rule 2 holds per file), and sixteen small files finishing together cost a
/// couple of directory fsyncs instead of sixteen. A failed fsync fails every caller it was for.
final class DirectorySyncs: Sendable {
    /// Makes a directory's entries durable (`DownloadDirectory.sync`); a test's may count or hold.
    typealias Sync = @Sendable (DownloadDirectory) throws -> Void

    private typealias Key = DownloadDirectory.Identity

    private struct Waiter {
        var directory: DownloadDirectory
        var io: DiskIO
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Line {
        var waiting: [Waiter] = []
        var syncing = false
    }

    private let lines = NIOLockedValueBox<[Key: Line]>([:])
    private let syncDirectory: Sync
    /// Told each time a caller joins a line (`waitingCount`), so a test can wait for that
    /// instead of polling it.
    private let joined: @Sendable () -> Void

    init(sync: @escaping Sync = { try $0.sync() }, joined: @escaping @Sendable () -> Void = {}) {
        syncDirectory = sync
        self.joined = joined
    }

    /// Returns once an fsync of `directory` that began after this call has succeeded; throws
    /// that fsync's error. The fsync runs on a lane of `io` (the run's own file lanes).
    func sync(_ directory: DownloadDirectory, io: DiskIO) async throws {
        guard let key = directory.identity else {
            // Not identifiable (cannot be stat'ed): synced on its own.
            let sync = syncDirectory
            try await io.run { try sync(directory) }
            return
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let starts = lines.withLockedValue { lines -> Bool in
                var line = lines[key] ?? Line()
                line.waiting.append(Waiter(directory: directory, io: io, continuation: continuation))
                let starts = !line.syncing
                line.syncing = true
                lines[key] = line
                return starts
            }
            joined()
            // Drained by a task of its own, never cancelled with a caller.
            if starts { Task { await self.drain(key) } }
        }
    }

    /// Callers waiting for the next fsync of `directory` (not the one running): for tests.
    func waitingCount(_ directory: DownloadDirectory) -> Int {
        guard let key = directory.identity else { return 0 }
        return lines.withLockedValue { $0[key]?.waiting.count ?? 0 }
    }

    /// Syncs for whoever waits, batch after batch, until nobody does.
    private func drain(_ key: Key) async {
        let sync = syncDirectory
        while true {
            let batch = lines.withLockedValue { lines -> [Waiter] in
                guard var line = lines[key] else { return [] }
                let batch = line.waiting
                line.waiting = []
                if batch.isEmpty {
                    lines[key] = nil
                } else {
                    lines[key] = line
                }
                return batch
            }
            guard let first = batch.first else { return }
            let result: Result<Void, any Error>
            do {
                let directory = first.directory
                try await first.io.run { try sync(directory) }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            for waiter in batch { waiter.continuation.resume(with: result) }
        }
    }
}
