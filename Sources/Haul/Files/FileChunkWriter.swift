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
/// each part (segment) has its own pending batch, written with one `pwritev` when it is full (no
/// copy of the network buffers; one system call per batch instead of one per network chunk).
///
/// The write runs in the connection's own task, right after the chunk is accepted. An earlier
/// version handed every batch to NIO's thread pool; on 1 GiB over loopback that took 1.5 to 2.6 s
/// against 1.3 to 1.4 s inline (`Benchmarks/download-bench.sh`): a page-cache write is a memory
/// copy, cheaper than the hop, and while it runs the event loop keeps reading into
/// AsyncHTTPClient's buffer. A write the disk holds back holds back its connection: backpressure
/// reaches the socket, and a connection holds at most one batch. The fsync of a checkpoint, the
/// overlap read and the truncation run on the thread pool.
///
/// A stop never drops bytes that were already handed over: every checkpoint writes what is
/// pending first.
final class FileChunkWriter: ChunkWriter {
    /// Batch size for one connection. A connection holds at most one batch, so the connections
    /// of one download share about 2 MiB: 512 KiB batches up to 4 connections, 32 KiB at 64
    /// (DESIGN rule 7: memory does not grow with the number of connections beyond their buffers).
    static func batchSize(connections: Int) -> Int {
        max(32 << 10, min(512 << 10, (2 << 20) / max(1, connections)))
    }

    fileprivate struct Queue {
        var pending: [ByteBuffer] = []
        var pendingBytes = 0
        /// File offset of the first pending byte.
        var pendingOffset: Int64 = 0
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
    /// Held while a batch is written: a part's batches reach the file in order, and a
    /// checkpoint's offsets never include a write still running.
    private let state = NIOLockedValueBox(State())

    /// Opens (creating if needed, never truncating) the file `name` in `directory`, never
    /// through a link (see `DownloadDirectory`). `exclusive` when no `.part` was there at the
    /// start of the run: then the file is created here or the open fails, so two downloads
    /// (or two hosts of a fleet) can never share one `.part`. A new file's directory entry is
    /// synced, so a crash cannot lose the `.part` while the store claims its bytes.
    init(directory: DownloadDirectory, name: String, exclusive: Bool, batchSize: Int = FileChunkWriter.batchSize(connections: 1),
         pool: NIOThreadPool = .singleton, loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) throws {
        let existed = directory.status(of: name) != nil
        let descriptor = try directory.openFile(name, flags: O_RDWR | O_CREAT, exclusive: exclusive)
        if !existed {
            do {
                try directory.sync()
            } catch {
                closeDescriptor(descriptor)
                throw error
            }
        }
        self.path = Paths.join(directory.path, name)
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
        let (descriptor, path, batchSize) = (descriptor, path, batchSize)
        try state.withLockedValue { state in
            guard !state.closed else { throw HaulError(.internal, "\(path): written after close") }
            // Taken out and put back, so the batch array is never copied on write.
            var queue = state.queues.removeValue(forKey: part) ?? Queue()
            defer { state.queues[part] = queue }
            if !queue.pending.isEmpty, queue.pendingOffset + Int64(queue.pendingBytes) != offset {
                try queue.flush(descriptor: descriptor, path: path)
            }
            if queue.pending.isEmpty { queue.pendingOffset = offset }
            queue.pending.append(buffer)
            queue.pendingBytes += buffer.readableBytes
            if queue.pendingBytes >= batchSize { try queue.flush(descriptor: descriptor, path: path) }
        }
    }

    /// Writes every pending batch; returns each part's offset after its last written byte.
    private func drain() throws -> [Int64: Int64] {
        let (descriptor, path) = (descriptor, path)
        return try state.withLockedValue { state in
            for part in Array(state.queues.keys) {
                var queue = state.queues.removeValue(forKey: part)!
                defer { state.queues[part] = queue }
                try queue.flush(descriptor: descriptor, path: path)
            }
            return state.queues.compactMapValues(\.written)
        }
    }

    func flush() async throws -> [Int64: Int64] {
        try drain()
    }

    func checkpoint() async throws -> [Int64: Int64] {
        // The offsets are taken before the fsync: bytes written while it runs are not claimed.
        let written = try drain()
        let (descriptor, path) = (descriptor, path)
        try await pool.runIfActive(eventLoop: loop) {
            guard fsync(descriptor) == 0 else { throw FileSystemErrors.error(errno, "cannot sync", path) }
        }.get()
        return written
    }

    func read(at offset: Int64, count: Int) async throws -> [UInt8] {
        _ = try drain()
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
        // Pending bytes are cut away next: they are dropped, not written.
        state.withLockedValue { $0.queues = [:] }
        let (descriptor, path) = (descriptor, path)
        try await pool.runIfActive(eventLoop: loop) {
            guard ftruncate(descriptor, off_t(length)) == 0 else { throw FileSystemErrors.error(errno, "cannot truncate", path) }
        }.get()
    }

    func discard() async {
        let wasOpen = state.withLockedValue { state in
            defer {
                state.queues = [:]
                state.closed = true
            }
            return !state.closed
        }
        if wasOpen { closeDescriptor(descriptor) }
    }

    func close() async {
        // Every stop checkpoints (writing what is pending, reporting errors) before it closes;
        // whatever is left was never claimed by the store.
        _ = try? drain()
        let wasOpen = state.withLockedValue { state in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { closeDescriptor(descriptor) }
    }
}

extension FileChunkWriter.Queue {
    /// Writes the pending batch at its offset (called with the writer's lock held).
    mutating func flush(descriptor: Int32, path: String) throws {
        guard pendingBytes > 0 else { return }
        let end = pendingOffset + Int64(pendingBytes)
        let job = WriteJob(descriptor: descriptor, buffers: pending, offset: pendingOffset, path: path)
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        try job.run()
        written = max(written ?? 0, end)
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
