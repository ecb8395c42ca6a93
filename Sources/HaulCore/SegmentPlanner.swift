/// How one file is cut into segments for several connections: the first split once the server
/// has proven it serves ranges, and work stealing when a connection runs out of work. Pure
/// arithmetic on offsets; the state machine applies it.
public enum SegmentPlanner {
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
    public static func stealPoint(next: Int64, end: Int64, ownerSpeed: Double?, thiefSpeed: Double?, minimum: Int64) -> Int64? {
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
