import HaulCore
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The writer's state behind its lock: each part's pending batch, the batches handed to the
// writing lane, who waits for what, and the failure every later call throws.

extension FileChunkWriter {
    struct Queue {
        var pending: [ByteBuffer] = []
        var pendingBytes = 0
        /// When the first pending byte arrived (`NIODeadline` nanoseconds, monotonic).
        var pendingSince: Int64 = 0
        /// File offset of the first pending byte.
        var pendingOffset: Int64 = 0
        /// File offset after the part's last written byte (not necessarily synced).
        var written: Int64?

        var pendingEnd: Int64 { pendingOffset + Int64(pendingBytes) }
    }

    /// A part's bytes handed to the writing thread.
    struct Batch: Sendable {
        let sequence: UInt64
        let part: Int64
        let buffers: [ByteBuffer]
        let offset: Int64
        let count: Int

        var end: Int64 { offset + Int64(count) }
    }

    struct Waiter: Sendable {
        let ready: @Sendable (inout State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    struct State: Sendable {
        var queues: [Int64: Queue] = [:]
        /// Batches handed over and not yet taken by the writing thread, oldest first.
        var outbox = CircularBuffer<Batch>()
        /// Bytes handed over and not yet written (those being written included).
        var queuedBytes = 0
        /// The sequence number of the last batch handed over.
        var lastSequence: UInt64 = 0
        /// The batch the writing thread is writing now.
        var writing: UInt64?
        /// Whether the drain is submitted or running.
        var draining = false
        /// What uses the descriptor now: the drain, an fsync, a read, a truncation.
        var users = 0
        /// The first write that failed: every later call throws it.
        var failure: HaulError?
        /// Set by `close` and `discard`: nothing new may start.
        var closing = false
        /// The descriptor is closed.
        var closed = false
        var waiters: [Waiter] = []
    }
}

extension FileChunkWriter.Queue: Sendable {}

extension FileChunkWriter.State {
    func checkOpen(_ path: String, _ what: String) throws {
        guard !closing else { throw HaulError(.internal, "\(path): \(what) after close") }
        if let failure { throw failure }
    }

    func hasRoom(for bytes: Int) -> Bool {
        queuedBytes == 0 || queuedBytes + bytes <= FileChunkWriter.maxQueuedBytes
    }

    /// Whether every batch up to `sequence` is written (or was dropped).
    func isWritten(through sequence: UInt64) -> Bool {
        (outbox.first?.sequence ?? .max) > sequence && (writing.map { $0 > sequence } ?? true)
    }

    /// Hands the part's pending batch to the writing thread; true when the drain must be
    /// submitted (it was idle).
    mutating func handOver(_ queue: inout FileChunkWriter.Queue, part: Int64) -> Bool {
        guard queue.pendingBytes > 0 else { return false }
        lastSequence += 1
        outbox.append(
            .init(
                sequence: lastSequence, part: part, buffers: queue.pending, offset: queue.pendingOffset,
                count: queue.pendingBytes))
        queuedBytes += queue.pendingBytes
        queue.pending = []
        queue.pendingBytes = 0
        guard !draining else { return false }
        draining = true
        users += 1
        return true
    }

    mutating func handOverAll() -> Bool {
        var drain = false
        for part in Array(queues.keys) {
            var queue = queues.removeValue(forKey: part)!
            drain = handOver(&queue, part: part) || drain
            queues[part] = queue
        }
        return drain
    }

    /// The writing thread is done with `batch`.
    mutating func finish(_ batch: FileChunkWriter.Batch, error: HaulError?) {
        writing = nil
        queuedBytes -= batch.count
        if let error {
            fail(error)
        } else {
            let previous = queues[batch.part]?.written ?? 0
            queues[batch.part, default: .init()].written = max(previous, batch.end)
        }
    }

    /// Keeps the first failure and drops what was handed over after it: none of it can be claimed.
    mutating func fail(_ error: HaulError) {
        if failure == nil { failure = error }
        for batch in outbox { queuedBytes -= batch.count }
        outbox.removeAll()
    }

    /// Drops the pending batches and those not yet taken by the writing thread.
    mutating func dropUnwritten() {
        for batch in outbox { queuedBytes -= batch.count }
        outbox.removeAll()
        for part in Array(queues.keys) {
            queues[part]!.pending = []
            queues[part]!.pendingBytes = 0
        }
    }

    /// Takes out the waiters whose condition holds now.
    mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
        guard !waiters.isEmpty else { return [] }
        let all = waiters
        waiters = []
        var ready: [CheckedContinuation<Void, Never>] = []
        for waiter in all {
            if waiter.ready(&self) { ready.append(waiter.continuation) } else { waiters.append(waiter) }
        }
        return ready
    }
}

/// One batch: `pwritev` until every byte is down. The buffers are held here, so the pointers
/// taken from them stay valid for the call.
extension FileChunkWriter.Batch {
    func write(descriptor: Int32, path: String, calls: FileCalls) throws {
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
            let count = min(vectors.count - index, 1024) // IOV_MAX on Linux
            let written = vectors.withUnsafeMutableBufferPointer { all in
                calls.write(descriptor, all.baseAddress! + index, Int32(count), fileOffset, path)
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
