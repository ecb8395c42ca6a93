import HaulCore

/// A group of downloads as `GET /api/v1/groups` shows it: the name of content it stands for,
/// its downloads, and whether what completes them (its finish) was written.
public struct GroupView: Codable, Sendable, Hashable {
    public var id: String
    /// The name of content as it was added (`oci://registry/image:tag`).
    public var name: String
    /// Where its finish is written.
    public var directory: String
    /// `waiting` (some download not completed), `failed` (its finish could not be written:
    /// `error` says why; tried again at the next completion and start) or `finished`.
    public var state: DownloadGroup.State
    public var error: String?
    /// Its downloads' ids, the first the one its add answered with.
    public var members: [String]
    /// The files its finish names (those of its downloads, and any that were in place).
    public var files: Int
    /// Seconds since 1970.
    public var createdAt: Int64

    public init(_ group: DownloadGroup) {
        id = group.id.rawValue
        name = group.name
        directory = group.directory
        state = group.state
        error = group.error
        members = group.members.map(\.rawValue)
        files = group.files.count
        createdAt = group.createdAt
    }
}
