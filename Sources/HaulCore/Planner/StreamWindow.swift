/// The bytes of a download going to a stream in order (`haul get -o -`), over several
/// connections: a chunk that arrives at the next byte to send goes out at once, with whatever
/// waited right behind it; one that arrives ahead waits in memory, at most `capacity` bytes past
/// the next byte to send. A connection whose chunk would end past that waits for the front to
/// move (`admits`), so memory stays bounded however the connections race. Pure bookkeeping: the
/// writer that owns the stream keeps one and sends what `take` returns, in order.
public struct StreamWindow: Sendable {
    /// Bytes past the next byte to send that may wait in memory.
    public let capacity: Int64
    /// The next byte to send: every byte before it went out.
    public private(set) var sent: Int64
    /// Bytes waiting, by offset; never overlapping, all past `sent`.
    private var held: [Int64: any ByteChunk] = [:]
    /// How many bytes wait.
    public private(set) var heldBytes: Int64 = 0

    /// A window that sends from `start` (0, or a range's first byte) and holds at most
    /// `capacity` bytes (at least 1).
    public init(capacity: Int64, start: Int64 = 0) {
        self.capacity = max(1, capacity)
        self.sent = start
    }

    /// Whether a chunk of `count` bytes at `offset` fits now; one at the front always does.
    public func admits(offset: Int64, count: Int) -> Bool {
        offset <= sent || offset + Int64(count) <= sent + capacity
    }

    /// Takes `chunk` for `offset` and returns the chunks to send now, in order (empty while it
    /// waits for the bytes before it). Bytes already sent are dropped from its front (a request
    /// that re-read them). Throws `.internal` for a chunk that overlaps one waiting or does not
    /// fit (`admits` was not asked): two connections wrote the same bytes.
    public mutating func take(_ chunk: any ByteChunk, at offset: Int64) throws(HaulError) -> [any ByteChunk] {
        var chunk = chunk
        var offset = offset
        if offset < sent {
            let already = Int(min(Int64(chunk.count), sent - offset))
            chunk = chunk.slice(already..<chunk.count)
            offset += Int64(already)
        }
        guard chunk.count > 0 else { return [] }
        guard admits(offset: offset, count: chunk.count) else {
            throw HaulError(.internal, "bytes \(offset)+\(chunk.count) are past the stream's window (at \(sent))")
        }
        let end = offset + Int64(chunk.count)
        for (start, waiting) in held where start < end && offset < start + Int64(waiting.count) {
            throw HaulError(.internal, "bytes \(offset)+\(chunk.count) overlap bytes waiting at \(start)")
        }
        if offset > sent {
            held[offset] = chunk
            heldBytes += Int64(chunk.count)
            return []
        }
        var out: [any ByteChunk] = [chunk]
        sent += Int64(chunk.count)
        while let next = held.removeValue(forKey: sent) {
            heldBytes -= Int64(next.count)
            sent += Int64(next.count)
            out.append(next)
        }
        return out
    }
}
