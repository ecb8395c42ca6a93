import NIOConcurrencyHelpers
import NIOPosix

/// The threads on which one download's file work may block.
///
/// No blocking file call runs on Swift's cooperative pool: it has as many threads as cores (two
/// here), so two writes held back by a disk used to stall every download and the daemon's API.
/// Nor on a pool shared between downloads: `NIOThreadPool.singleton` also has as many threads as
/// cores, so two downloads stuck on a slow disk would hold up every other download's writes and
/// checkpoints. Each run starts its own (three threads, mostly asleep) and shuts it down when it
/// ends:
/// - `writes`, one thread: the `.part`'s batches, in the order they were handed over
///   (`FileChunkWriter`); a connection goes on reading while its last batch is written;
/// - `files`, two threads: fsync, reads, truncation, opening, publishing and removing files,
///   progress notes, hashing. Two, so that a long checkpoint fsync (in the background) leaves
///   the run's loop a thread for its progress note or a publish.
///
/// A run's threads are not started for every download: the manager keeps those of runs that
/// ended (`Spares`) for the next ones, so ten thousand small files start about as many threads as
/// the most downloads that ran at once, not thirty thousand. Work for the manager as a whole
/// (removing a download's files, looking at names) is not any run's: it goes to
/// `NIOThreadPool.singleton` through `BlockingIO`.
final class DiskIO: Sendable {
    let calls: FileCalls
    let writes: NIOThreadPool
    let files: NIOThreadPool

    /// Starts the threads (a few microseconds each; they wait for work).
    init(calls: FileCalls = .system) {
        self.calls = calls
        writes = NIOThreadPool(numberOfThreads: 1)
        files = NIOThreadPool(numberOfThreads: 2)
        writes.start()
        files.start()
    }

    /// Runs `body` on one of the `files` threads.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await BlockingIO.run(on: files, body)
    }

    /// Lets queued work finish, then stops the threads. Call it once, after the writer is closed.
    func shutdown() async throws {
        try await writes.shutdownGracefully()
        try await files.shutdownGracefully()
    }
}

extension DiskIO {
    /// The threads of runs that ended, for the next runs. A run hands its `DiskIO` back only once
    /// everything it started on it has ended, so a spare is always idle; there are never more
    /// spares than runs that ran at once.
    final class Spares: Sendable {
        let calls: FileCalls
        private let idle = NIOLockedValueBox<[DiskIO]>([])

        init(calls: FileCalls) {
            self.calls = calls
        }

        /// An idle one, or new threads.
        func take() -> DiskIO {
            idle.withLockedValue { $0.popLast() } ?? DiskIO(calls: calls)
        }

        func giveBack(_ io: DiskIO) {
            idle.withLockedValue { $0.append(io) }
        }

        /// Stops every spare's threads (the manager's shutdown, once its runs ended).
        func shutdown() async throws {
            for io in idle.withLockedValue({ idle in defer { idle = [] }; return idle }) {
                try await io.shutdown()
            }
        }
    }
}
