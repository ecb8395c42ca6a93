/// Where the connections of a download read in order (`--sequential`) work: pure arithmetic on
/// offsets; the state machine applies it (`DownloadStateMachine+Sequential`).
///
/// The first piece and the last are fetched first (an MP4's `moov` atom is often at its end, a
/// safetensors header at its start); then each connection takes the next window of one piece
/// (`-k`) just past the bytes asked for already, never one that ends farther than `lead` past the
/// first byte still missing. So the file's contiguous prefix trails the bytes received by at most
/// `lead` bytes: 4 x connections x piece (16 MiB at `-x 4 -k 1M`).
public enum SequentialPlanner {
    /// How far past the first missing byte a window may end: 4 x `connections` x `piece`.
    public static func lead(connections: Int, piece: Int64) -> Int64 {
        4 * Int64(max(1, connections)) * max(1, piece)
    }

    /// The last byte of the window that starts at `start` in a stretch ending at `end`: one
    /// piece, and a rest under half a piece goes with it (no tiny request at the end).
    public static func windowEnd(start: Int64, end: Int64, piece: Int64) -> Int64 {
        SegmentPlanner.pieceEnd(next: start, partEnd: end, size: max(1, piece))
    }

    /// Whether a window ending at `windowEnd` may be taken while `firstMissing` is the first byte
    /// the file still lacks.
    public static func mayTake(windowEnd: Int64, firstMissing: Int64, connections: Int, piece: Int64) -> Bool {
        windowEnd < firstMissing + lead(connections: connections, piece: piece)
    }

    /// The first byte of the tail fetched early, the last piece of the bytes `first...last`;
    /// nil when they are no more than two pieces (the windows reach the end soon enough).
    public static func tailStart(first: Int64, last: Int64, piece: Int64) -> Int64? {
        let piece = max(1, piece)
        guard last - first + 1 > 2 * piece else { return nil }
        return last - piece + 1
    }
}
