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

    /// A caller's directory, and the lanes its fsync may run on (the run's own file lanes).
    private struct Request: Sendable {
        var directory: DownloadDirectory
        var io: DiskIO
    }

    /// A line per directory: a failed fsync fails every caller it was for, and is not tried
    /// again for them (after a failed fsync, another may report success for what was lost).
    private let line: BatchLine<DownloadDirectory.Identity, Request, Void>
    private let syncDirectory: Sync

    /// `joined`: told each time a caller joins a directory's line (`waitingCount`), so a test
    /// can wait for that instead of polling it.
    init(sync: @escaping Sync = { try $0.sync() }, joined: @escaping @Sendable () -> Void = {}) {
        syncDirectory = sync
        line = BatchLine(failure: .all, joined: joined) { _, batch in
            let first = batch[0]
            try await first.io.run { try sync(first.directory) }
            return batch.map { _ in () }
        }
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
        try await line.submit(Request(directory: directory, io: io), to: key)
    }

    /// Callers waiting for the next fsync of `directory` (not the one running): for tests.
    func waitingCount(_ directory: DownloadDirectory) async -> Int {
        guard let key = directory.identity else { return 0 }
        return await line.waitingCount(key)
    }
}
