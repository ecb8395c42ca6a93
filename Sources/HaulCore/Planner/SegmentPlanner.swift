/// How one file is cut into segments for several connections: the first split once the server
/// has proven it serves ranges, the pieces each connection asks for in turn, and work stealing
/// when a connection runs out of work. Pure arithmetic on offsets; the state machine applies it.
///
/// A part (a segment, what the store keeps) belongs to one connection; the connection asks for
/// it a piece at a time. A request for a bounded piece ends on its own, so the connection goes
/// back to the pool and carries the next piece (keep-alive: one TCP connect and one TLS handshake
/// for many requests), and a thief can take the tail nobody has asked for yet instead of cutting
/// a running request.
public enum SegmentPlanner {
    /// The size of the pieces of a download of `total` bytes over `connections`, each
    /// connection's share asked for in `perConnection` pieces: at least `minimum` (the smallest
    /// part) and at most `maximum`. Before the length is known (the first request), `minimum`:
    /// the first answer proves ranges and tells the length early, and a small file still gets
    /// several connections. Nil when `perConnection` is 0: a request asks for its whole part.
    public static func pieceSize(total: Int64?, connections: Int, perConnection: Int64, minimum: Int64, maximum: Int64)
        -> Int64?
    {
        guard perConnection > 0 else { return nil }
        let floor = max(1, minimum)
        let ceiling = max(floor, maximum)
        guard let total else { return min(floor, ceiling) }
        let share = total / (Int64(max(1, connections)) * perConnection)
        return min(max(share, floor), ceiling)
    }

    /// The last byte of the piece that starts at `next` in a part ending at `partEnd` (nil while
    /// the length is unknown). A rest under half a piece goes with this piece: no tiny request
    /// at the end of a part.
    public static func pieceEnd(next: Int64, partEnd: Int64?, size: Int64) -> Int64 {
        let end = next + max(1, size) - 1
        guard let partEnd else { return end }
        return partEnd - end < size / 2 ? partEnd : min(end, partEnd)
    }

    /// Where to cut the bytes `next...end` into at most `pieces` parts of at least `minimum`
    /// bytes each, as equal as possible. Returns the start of every part after the first (empty
    /// when the range is too small to split).
    public static func splitPoints(next: Int64, end: Int64, pieces: Int, minimum: Int64) -> [Int64] {
        let remaining = end - next + 1
        guard remaining > 0, pieces > 1 else { return [] }
        let count = Int(min(Int64(pieces), max(1, remaining / max(1, minimum))))
        guard count > 1 else { return [] }
        let size = remaining / Int64(count)
        let extra = remaining % Int64(count)
        var points: [Int64] = []
        var start = next
        for index in 0..<(count - 1) {
            start += size + (Int64(index) < extra ? 1 : 0)
            points.append(start)
        }
        return points
    }

    /// Where an idle connection should cut a running part (`next...end`) so that the part's own
    /// connection and the idle one finish at the same time: the cut leaves each a share of the
    /// remaining bytes in proportion to its speed (half each while a speed is unknown). Nil when
    /// the idle connection's share would be under `minimum` bytes. A cut at `next` takes the
    /// whole rest: the running connection is so slow that replacing it is faster.
    public static func stealPoint(next: Int64, end: Int64, ownerSpeed: Double?, thiefSpeed: Double?, minimum: Int64)
        -> Int64?
    {
        let remaining = end - next + 1
        guard remaining > 0 else { return nil }
        var share = 0.5
        if let ownerSpeed, let thiefSpeed, ownerSpeed + thiefSpeed > 0 {
            share = thiefSpeed / (ownerSpeed + thiefSpeed)
        }
        let taken = min(remaining, Int64((Double(remaining) * share).rounded(.up)))
        guard taken >= max(1, minimum) else { return nil }
        return end + 1 - taken
    }
}
