#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HaulCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Writes the bodies of a download's connections into its `.part` file with positional writes:
/// each part (segment) has its own queue, batched into one `pwritev` per batch (no copy of the
/// network buffers; one system call per batch instead of one per network chunk, measured about
/// 2x faster). A part's batches run one after another on NIO's thread pool while its connection
/// fills the next one, so disk and network overlap; a connection that gets two batches ahead of
/// the disk waits, so memory stays at about two batches per connection.
///
/// Writes run as futures on the thread pool, not as cancellable async work: a stop never drops
/// bytes that were already handed over, and the checkpoint after a stop needs no shield.
final class FileChunkWriter: ChunkWriter {
    /// Batch size for one connection; several connections share a budget of 8 MiB.
    static func batchSize(connections: Int) -> Int {
        max(64 << 10, min(512 << 10, (8 << 20) / max(1, connections)))
    }

    private struct Queue {
        var pending: [ByteBuffer] = []
        var pendingBytes = 0
        /// File offset of the first pending byte.
        var pendingOffset: Int64 = 0
        /// Completes when the last submitted batch is on disk.
        var tail: EventLoopFuture<Void>?
        /// Bytes submitted but not yet known to be written.
        var inFlightBytes = 0
        /// File offset after the last byte written (not necessarily synced).
        var written: Int64?
    }

    private struct State {
        var queues: [Int64: Queue] = [:]
        var closed = false
    }

    let path: String
    private let descriptor: Int32
    private let batchSize: Int
    private let pool: NIOThreadPool
    private let loop: any EventLoop
    private let state = NIOLockedValueBox(State())

    /// Opens (creating if needed, never truncating) the file at `path`. A new file's directory
    /// entry is synced, so a crash cannot lose the `.part` while the store claims its bytes.
    init(path: String, batchSize: Int = FileChunkWriter.batchSize(connections: 1), pool: NIOThreadPool = .singleton,
         loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) throws {
        let existed = DestinationFiles.exists(path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileSystemErrors.error(errno, "cannot open", path) }
        if !existed { DestinationFiles.syncDirectory(of: path) }
        self.path = path
        self.descriptor = descriptor
        self.batchSize = batchSize
        self.pool = pool
        self.loop = loop
    }

    deinit {
        if !state.withLockedValue({ $0.closed }) { closeDescriptor(descriptor) }
    }

    func write(_ chunk: any ByteChunk, at offset: Int64, part: Int64) async throws {
        guard chunk.count > 0 else { return }
        let buffer = chunk as? ByteBuffer ?? chunk.withUnsafeBytes { ByteBuffer(bytes: $0) }
        let wait: EventLoopFuture<Void>? = state.withLockedValue { state in
            var queue = state.queues[part] ?? Queue()
            if !queue.pending.isEmpty, queue.pendingOffset + Int64(queue.pendingBytes) != offset {
                submit(&queue, part: part)
            }
            if queue.pending.isEmpty { queue.pendingOffset = offset }
            queue.pending.append(buffer)
            queue.pendingBytes += buffer.readableBytes
            var wait: EventLoopFuture<Void>?
            if queue.pendingBytes >= batchSize {
                // Two batches ahead of the disk: wait for the one in flight first.
                if queue.inFlightBytes > 0 { wait = queue.tail }
                submit(&queue, part: part)
            }
            state.queues[part] = queue
            return wait
        }
        try await wait?.get()
    }

    /// Chains the pending batch after the part's last one (called under the lock).
    private func submit(_ queue: inout Queue, part: Int64) {
        guard queue.pendingBytes > 0 else { return }
        let job = WriteJob(descriptor: descriptor, buffers: queue.pending, offset: queue.pendingOffset, path: path)
        let count = queue.pendingBytes
        let end = queue.pendingOffset + Int64(count)
        queue.pending = []
        queue.pendingBytes = 0
        queue.inFlightBytes += count
        let (pool, loop, state) = (pool, loop, state)
        let previous = queue.tail ?? loop.makeSucceededVoidFuture()
        queue.tail = previous.flatMap {
            pool.runIfActive(eventLoop: loop) { try job.run() }
        }.map {
            state.withLockedValue { state in
                guard var queue = state.queues[part] else { return }
                queue.inFlightBytes -= count
                queue.written = max(queue.written ?? 0, end)
                state.queues[part] = queue
            }
        }
    }

    /// Submits every pending batch and waits until all are written.
    private func drain() async throws {
        let tails: [EventLoopFuture<Void>] = state.withLockedValue { state in
            var tails: [EventLoopFuture<Void>] = []
            for (part, var queue) in state.queues {
                submit(&queue, part: part)
                state.queues[part] = queue
                if let tail = queue.tail { tails.append(tail) }
            }
            return tails
        }
        for tail in tails { try await tail.get() }
    }

    func checkpoint() async throws -> [Int64: Int64] {
        try await drain()
        let (descriptor, path) = (descriptor, path)
        try await pool.runIfActive(eventLoop: loop) {
            guard fsync(descriptor) == 0 else { throw FileSystemErrors.error(errno, "cannot sync", path) }
        }.get()
        return state.withLockedValue { state in state.queues.compactMapValues(\.written) }
    }

    func read(at offset: Int64, count: Int) async throws -> [UInt8] {
        try await drain()
        let (descriptor, path) = (descriptor, path)
        return try await pool.runIfActive(eventLoop: loop) {
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
        }.get()
    }

    func truncate(to length: Int64) async throws {
        try? await drain()
        state.withLockedValue { $0.queues = [:] }
        let (descriptor, path) = (descriptor, path)
        try await pool.runIfActive(eventLoop: loop) {
            guard ftruncate(descriptor, off_t(length)) == 0 else { throw FileSystemErrors.error(errno, "cannot truncate", path) }
        }.get()
    }

    func close() async {
        try? await drain()
        let wasOpen = state.withLockedValue { state in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { closeDescriptor(descriptor) }
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    close(descriptor)
}

/// One batch: `pwritev` until every byte is down. The buffers are held here, so the pointers
/// taken from them stay valid for the call.
private struct WriteJob: Sendable {
    let descriptor: Int32
    let buffers: [ByteBuffer]
    let offset: Int64
    let path: String

    func run() throws {
        var vectors: [iovec] = []
        vectors.reserveCapacity(buffers.count)
        for buffer in buffers {
            buffer.withUnsafeReadableBytes { raw in
                vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
            }
        }
        var index = 0
        var fileOffset = offset
        while index < vectors.count {
            let count = min(vectors.count - index, 1024)  // IOV_MAX on Linux
            let written = vectors.withUnsafeMutableBufferPointer { all in
                pwritev(descriptor, all.baseAddress! + index, Int32(count), off_t(fileOffset))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw FileSystemErrors.error(errno, "cannot write", path)
            }
            fileOffset += Int64(written)
            // Skip whole vectors written, trim a partly written one.
            var remaining = written
            while remaining > 0, index < vectors.count {
                if remaining >= vectors[index].iov_len {
                    remaining -= vectors[index].iov_len
                    index += 1
                } else {
                    vectors[index].iov_base += remaining
                    vectors[index].iov_len -= remaining
                    remaining = 0
                }
            }
            while index < vectors.count, vectors[index].iov_len == 0 { index += 1 }
        }
    }
}
