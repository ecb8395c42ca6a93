/// Why a download threw its bytes away and started over: a label for metrics and logs, beside
/// the sentence the user reads.
public enum RestartCause: String, Sendable, Hashable, Codable, CaseIterable {
    /// A range request got the whole file (200): the server ignores ranges.
    case rangesIgnored = "ranges-ignored"
    /// The validator or length differs between two connections of the same download.
    case changedBetweenConnections = "changed-between-connections"
    /// The validator differs from the stored one on a resume.
    case changedOnServer = "changed-on-server"
    /// Two responses announce different digests of the representation (`Repr-Digest`, `Digest`).
    case digestChanged = "digest-changed"
    /// Without a validator, the re-read overlap differs from the bytes on disk.
    case overlapMismatch = "overlap-mismatch"
    /// The `.part` is shorter than its checkpoint says (lost or truncated).
    case partShorter = "part-shorter"
}
