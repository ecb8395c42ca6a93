/// A contiguous run of the remote file that one connection fills, and how much of it is durably
/// on disk. A download is a list of segments from the start, so splitting a file over several
/// connections later adds planning, not a new model.
public struct Segment: Hashable, Codable, Sendable {
    /// Offset in the remote entity of the segment's first byte.
    public var start: Int64
    /// Offset of its last byte, inclusive; nil while the entity's length is unknown and the
    /// segment runs to the end.
    public var end: Int64?
    /// Bytes of this segment known to be on disk (checkpointed or about to be).
    public var written: Int64

    /// A segment from `start` to `end` (nil: to the end of the entity), with `written` bytes already
    /// on disk.
    public init(start: Int64, end: Int64? = nil, written: Int64 = 0) {
        self.start = start
        self.end = end
        self.written = written
    }

    /// The next remote offset this segment needs.
    public var nextOffset: Int64 { start + written }

    /// Planned length, when known.
    public var length: Int64? { end.map { $0 - start + 1 } }

    /// True once every planned byte is written. A segment with no known end is never complete
    /// on its own: only the end of a body with no length can say so.
    public var isComplete: Bool { length.map { written >= $0 } ?? false }

    /// The range to ask the server for to continue this segment.
    public var remaining: ByteRange { ByteRange(start: nextOffset, end: end) }
}
