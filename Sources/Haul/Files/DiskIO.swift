/// Where one download's blocking file work runs.
///
/// No blocking file call runs on Swift's cooperative pool: it has as many threads as cores (two
/// here), so two writes held back by a disk used to stall every download and the daemon's API.
/// Nor on a pool shared between downloads: `NIOThreadPool.singleton` also has as many threads as
/// cores, so two downloads stuck on a slow disk would hold up every other download's writes and
/// checkpoints. Each run has lanes of its own (`BlockingLanes`: serial Dispatch queues, whose
/// threads exist only while they have work):
/// - `writes`, one lane: the `.part`'s batches, in the order they were handed over
///   (`FileChunkWriter`); a connection goes on reading while its last batch is written;
/// - `files`, two lanes: fsync, reads, truncation, opening, publishing and removing files,
///   progress notes, hashing. Two, so that a long checkpoint fsync (in the background) leaves
///   the run's loop a lane for its progress note or a publish.
///
/// Work for the manager as a whole (removing a download's files, looking at names) is not any
/// run's: it goes to `NIOThreadPool.singleton` through `BlockingIO`.
final class DiskIO: Sendable {
    let calls: FileCalls
    let writes: BlockingLanes
    let files: BlockingLanes

    /// Makes the lanes (no thread starts until there is work).
    init(calls: FileCalls = .system) {
        self.calls = calls
        writes = BlockingLanes(width: 1, label: "haul.writes")
        files = BlockingLanes(width: 2, label: "haul.files")
    }

    /// Runs `body` on one of the `files` lanes.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await files.run(body)
    }
}
