import HaulCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes the bodies of a download's connections into its `.part` file with positional writes:
/// each part (segment) has its own pending batch; a full one is handed to the run's writing
/// thread (`DiskIO.writes`), which writes the batches one after another, each with one `pwritev`
/// (no copy of the network buffers; one system call per batch instead of one per network chunk).
///
/// No write runs on Swift's cooperative pool: a disk that holds a write back holds back this
/// download only, never the other downloads or the daemon's API (two writes stuck there used to
/// stall the whole process). Nor does a connection wait for each batch: handing one over is an
/// append under a lock, and the writing thread is woken only when it was idle. (An earlier
/// version awaited every batch on `NIOThreadPool` through an event-loop future: 1 GiB over
/// loopback took 1.5 to 2.6 s against 1.3 to 1.4 s written inline.) Backpressure still reaches
/// the socket: a connection whose batch is full waits while more than `maxQueuedBytes` are handed
/// over and not yet written, so a download reads at most its pending batches (about 2 MiB) plus
/// `maxQueuedBytes` ahead of its disk.
///
/// The descriptor is closed only once nothing uses it: `close` and `discard` first wait for the
/// writing thread and for any fsync, read or truncation running on it. (Closed under a queued
/// fsync, the number could already name another file: the fsync would sync that one and the
/// checkpoint claim bytes that are not durable.)
///
/// A stop never drops bytes that were already handed over: every checkpoint writes what is
/// pending first. A failed write is kept and thrown by every later call.
final class FileChunkWriter: ChunkWriter {
    /// Batch size for one connection. A connection holds at most one pending batch, so the
    /// connections of one download share about 2 MiB: 512 KiB batches up to 4 connections, 32 KiB
    /// at 64 (DESIGN rule 7: memory does not grow with the number of connections beyond their
    /// buffers).
    static func batchSize(connections: Int) -> Int {
        max(32 << 10, min(512 << 10, (2 << 20) / max(1, connections)))
    }

    /// The longest pending bytes wait for their batch to fill before they go to the disk anyway
    /// (checked when the next chunk comes, on the writer's clock): with a thousand slow
    /// downloads, what they held between checkpoints was most of the daemon's memory.
    static let maxHoldNanoseconds: Int64 = 200_000_000

    /// Bytes handed to the writing thread and not yet written above which a connection with a
    /// full batch waits before handing it over: the disk's share of how far a download reads ahead.
    static let maxQueuedBytes = 2 << 20

    let path: String
    private let descriptor: Int32
    private let batchSize: Int
    private let io: DiskIO
    /// Times how long pending bytes have waited (`maxHoldNanoseconds`); a test's is manual.
    private let clock: any HaulClock
    /// Told each time a call starts waiting for the disk (`waitingCalls`), so a test can wait
    /// for that instead of polling it.
    private let waited: @Sendable () -> Void
    private let state = NIOLockedValueBox(State())

    /// Opens (creating if needed, never truncating) the file `name` in `directory`, never
    /// through a link (see `DownloadDirectory`), on one of `io`'s threads. `exclusive` when no
    /// `.part` was there at the start of the run: then the file is created here or the open
    /// fails, so two downloads (or two hosts of a fleet) can never share one `.part`. A new
    /// file's directory entry is synced, so a crash cannot lose the `.part` while the store
    /// claims its bytes: through `syncs` (one fsync of the directory for every file created or
    /// published in it meanwhile; by default one of its own). `clock` and `waited`: see their
    /// properties (a test's).
    static func open(
        in directory: DownloadDirectory, name: String, exclusive: Bool,
        batchSize: Int = FileChunkWriter.batchSize(connections: 1), io: DiskIO,
        syncs: DirectorySyncs = DirectorySyncs(), clock: any HaulClock = ClockAdapter(ContinuousClock()),
        waited: @escaping @Sendable () -> Void = {}
    ) async throws -> FileChunkWriter {
        let calls = io.calls
        let path = Paths.join(directory.path, name)
        let (descriptor, created) = try await io.run {
            let existed = directory.status(of: name) != nil
            return (try directory.openFile(name, flags: O_RDWR | O_CREAT, exclusive: exclusive), !existed)
        }
        if created {
            do {
                try await syncs.sync(directory, io: io)
            } catch {
                // The error that matters is the sync's; the descriptor goes either way.
                _ = calls.close(descriptor, path)
                throw error
            }
        }
        return FileChunkWriter(
            descriptor: descriptor, path: path, batchSize: batchSize, io: io, clock: clock, waited: waited)
    }

    private init(
        descriptor: Int32, path: String, batchSize: Int, io: DiskIO, clock: any HaulClock,
        waited: @escaping @Sendable () -> Void
    ) {
        self.descriptor = descriptor
        self.path = path
        self.batchSize = batchSize
        self.io = io
        self.clock = clock
        self.waited = waited
    }

    deinit {
        // Only a writer that was never closed (or whose close could not reach its thread) gets
        // here, and then nothing uses the descriptor: every job holds the writer. Nobody is left
        // to hear an error.
        if !state.withLockedValue({ $0.closed }) { _ = io.calls.close(descriptor, path) }
    }

    /// How many calls wait for the disk now (a full batch without room, a flush, a close): what
    /// a test sees of a held disk.
    var waitingCalls: Int { state.withLockedValue { $0.waiters.count } }

    // MARK: ChunkWriter

    func write(_ chunk: any ByteChunk, at offset: Int64, part: Int64) async throws {
        guard chunk.count > 0 else { return }
        var buffer = chunk as? ByteBuffer ?? chunk.withUnsafeBytes { ByteBuffer(bytes: $0) }
        if buffer.storageCapacity >= 2 * buffer.readableBytes + 4096 {
            // A small chunk of a large receive buffer (a slow download's): kept as is, it would
            // keep the whole buffer until its batch is written; a copy keeps only its bytes.
            buffer = ByteBuffer(buffer.readableBytesView)
        }
        let (path, batchSize) = (path, batchSize)
        let now = Int64(clock.seconds() * 1e9)
        let (drain, full) = try state.withLockedValue { state in
            try state.checkOpen(path, "written")
            // Taken out and put back, so the batch array is never copied on write.
            var queue = state.queues.removeValue(forKey: part) ?? Queue()
            defer { state.queues[part] = queue }
            var drain = false
            if queue.pendingBytes > 0, queue.pendingEnd != offset {
                // Not back to back: what came before goes first.
                drain = state.handOver(&queue, part: part)
            }
            if queue.pendingBytes == 0 { (queue.pendingOffset, queue.pendingSince) = (offset, now) }
            queue.pending.append(buffer)
            queue.pendingBytes += buffer.readableBytes
            // A slow download's batch would take seconds to fill, each of its small chunks
            // keeping a whole receive buffer: it goes to the disk once it has waited long enough.
            guard queue.pendingBytes >= batchSize || now - queue.pendingSince >= Self.maxHoldNanoseconds else {
                return (drain, false)
            }
            guard state.hasRoom(for: queue.pendingBytes) else { return (drain, true) }
            return (state.handOver(&queue, part: part) || drain, false)
        }
        if drain { startDrain() }
        if full { try await handOverWhenRoom(part) }
    }

    func flush() async throws -> [Int64: Int64] {
        let path = path
        let (target, drain) = try state.withLockedValue { state in
            try state.checkOpen(path, "flushed")
            let drain = state.handOverAll()
            return (state.lastSequence, drain)
        }
        if drain { startDrain() }
        await wait { $0.isWritten(through: target) }
        return try state.withLockedValue { state in
            if let failure = state.failure { throw failure }
            return state.queues.compactMapValues(\.written)
        }
    }

    func checkpoint() async throws -> [Int64: Int64] {
        // The offsets are taken before the fsync: bytes written while it runs are not claimed.
        let written = try await flush()
        let (calls, path) = (io.calls, path)
        try await withDescriptor("synced") { descriptor in
            guard calls.sync(descriptor, path) == 0 else { throw FileSystemErrors.error(errno, "cannot sync", path) }
        }
        return written
    }

    func read(at offset: Int64, count: Int) async throws -> [UInt8] {
        _ = try await flush()
        let path = path
        return try await withDescriptor("read") { descriptor in
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let got = bytes.withUnsafeMutableBytes { raw in
                    pread(descriptor, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                }
                if got < 0 {
                    if errno == EINTR { continue }
                    throw FileSystemErrors.error(errno, "cannot read", path)
                }
                if got == 0 { break }
                done += got
            }
            return Array(bytes[..<done])
        }
    }

    func truncate(to length: Int64) async throws {
        let path = path
        // Pending bytes are cut away next: they are dropped, not written. A batch being written
        // ends first, so nothing lands beyond the cut and no offset outlives it.
        let target = try state.withLockedValue { state in
            try state.checkOpen(path, "truncated")
            state.dropUnwritten()
            return state.lastSequence
        }
        wakeReadyWaiters()
        await wait { $0.isWritten(through: target) }
        state.withLockedValue { $0.queues = [:] }
        try await withDescriptor("truncated") { descriptor in
            guard ftruncate(descriptor, off_t(length)) == 0 else {
                throw FileSystemErrors.error(errno, "cannot truncate", path)
            }
        }
    }

    func discard() async throws {
        let first = state.withLockedValue { state in
            defer { state.closing = true }
            state.dropUnwritten()
            return !state.closing
        }
        wakeReadyWaiters()
        if first { try await closeDescriptor() }
    }

    /// Every stop checkpoints (writing what is pending, reporting errors) before it closes;
    /// whatever is left was never claimed by the store, and is written all the same.
    func close() async throws {
        let started: (target: UInt64, drain: Bool)? = state.withLockedValue { state in
            guard !state.closing else { return nil }
            state.closing = true
            let drain = state.handOverAll()
            return (state.lastSequence, drain)
        }
        guard let started else { return }
        wakeReadyWaiters()
        if started.drain { startDrain() }
        await wait { $0.isWritten(through: started.target) }
        let failure = state.withLockedValue { $0.failure }
        try await closeDescriptor()
        if let failure { throw failure }
    }

    // MARK: The writing thread

    /// Submits the drain to the writing thread (called once `handOver` said it was idle).
    private func startDrain() {
        io.writes.submit { [self] in drain() }
    }

    /// Writes the handed-over batches one after another until none is left (on the writing
    /// thread). Only this thread takes batches out, so they reach the file in order.
    private func drain() {
        var finished: (batch: Batch, error: HaulError?)?
        while true {
            let (next, ready): (Batch?, [CheckedContinuation<Void, Never>]) = state.withLockedValue { state in
                if let finished { state.finish(finished.batch, error: finished.error) }
                if let batch = state.outbox.popFirst() {
                    state.writing = batch.sequence
                    return (batch, state.readyWaiters())
                }
                state.draining = false
                state.users -= 1
                return (nil, state.readyWaiters())
            }
            for continuation in ready { continuation.resume() }
            guard let next else { return }
            do {
                try next.write(descriptor: descriptor, path: path, calls: io.calls)
                finished = (next, nil)
            } catch {
                finished = (next, HaulError.from(error, otherwise: .fileSystem))
            }
        }
    }

    // MARK: Waiting

    /// A full batch waits until the writing thread has room for it (or a flush took it along).
    private func handOverWhenRoom(_ part: Int64) async throws {
        let path = path
        while true {
            let (done, drain) = try state.withLockedValue { state in
                try state.checkOpen(path, "written")
                guard var queue = state.queues.removeValue(forKey: part) else { return (true, false) }
                defer { state.queues[part] = queue }
                guard queue.pendingBytes > 0 else { return (true, false) }
                guard state.hasRoom(for: queue.pendingBytes) else { return (false, false) }
                return (true, state.handOver(&queue, part: part))
            }
            if drain { startDrain() }
            if done { return }
            await wait { state in
                guard state.failure == nil, !state.closing, let queue = state.queues[part] else { return true }
                return queue.pendingBytes == 0 || state.hasRoom(for: queue.pendingBytes)
            }
        }
    }

    /// Suspends (never blocks) until `ready` holds; checked under the lock whenever the state
    /// changes, and at once.
    private func wait(until ready: @escaping @Sendable (inout State) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state in
                if ready(&state) { return true }
                state.waiters.append(Waiter(ready: ready, continuation: continuation))
                return false
            }
            if now {
                continuation.resume()
            } else {
                waited()
            }
        }
    }

    private func wakeReadyWaiters() {
        for continuation in state.withLockedValue({ $0.readyWaiters() }) { continuation.resume() }
    }

    /// Runs `body` with the descriptor on one of the run's file threads; the descriptor stays
    /// open until it returns.
    private func withDescriptor<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Int32) throws -> T)
        async throws -> T
    {
        let path = path
        try state.withLockedValue { state in
            try state.checkOpen(path, what)
            state.users += 1
        }
        let descriptor = descriptor
        let result: Result<T, any Error>
        do {
            result = .success(try await io.run { try body(descriptor) })
        } catch {
            result = .failure(error)
        }
        let ready = state.withLockedValue { state in
            state.users -= 1
            return state.readyWaiters()
        }
        for continuation in ready { continuation.resume() }
        return try result.get()
    }

    /// Closes the descriptor once nothing uses it (`closing` is set: nothing new starts).
    private func closeDescriptor() async throws {
        await wait { $0.users == 0 }
        let (descriptor, path, calls, state) = (descriptor, path, io.calls, state)
        try await io.run {
            let result = calls.close(descriptor, path)
            let error = errno
            // Released even when close reports an error: it must not be closed twice.
            state.withLockedValue { $0.closed = true }
            guard result == 0 else { throw FileSystemErrors.error(error, "cannot close", path) }
        }
    }
}
