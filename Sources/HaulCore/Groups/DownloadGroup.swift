/// A group's identity: 16 lowercase hex digits, as a download's.
public struct GroupID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The identifier's text, as printed and stored.
    public var rawValue: String

    /// Wraps `rawValue` as it is (an id read from a store).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A fresh random identifier.
    public static func random() -> GroupID { GroupID(rawValue: DownloadID.random().rawValue) }

    /// The raw value.
    public var description: String { rawValue }
    /// Compares the raw values as strings.
    public static func < (lhs: GroupID, rhs: GroupID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The downloads one name of content stands for (`hf://`, `oci://`, `s3://`, a Metalink of
/// several files), and what completes them once every one is in: kept by the store beside the
/// downloads, so that the finish is written once after a restart too, by whichever fleet host
/// completes the last member, and aria2's `followedBy` and `following` survive a restart.
public struct DownloadGroup: Sendable, Hashable, Codable {
    /// Where a group stands.
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        /// Some member has not completed yet (or none was checked since the last did).
        case waiting
        /// Its finish was tried and failed (`error` says why): tried again at the next
        /// completion of a member, and at the next start.
        case failed
        /// Every member completed and its finish (if any) was written.
        case finished
    }

    /// A file the finish names: its path beneath `directory`, and its length when the source said.
    public struct File: Sendable, Hashable, Codable {
        /// Its path beneath the group's directory.
        public var path: String
        /// Its length in bytes, when the source said.
        public var size: Int64?

        /// The file at `path`, of `size` bytes.
        public init(path: String, size: Int64?) {
            self.path = path
            self.size = size
        }
    }

    /// Its identity.
    public var id: GroupID
    /// What was added: the name of content as typed (`oci://registry/image:tag`).
    public var name: String
    /// Where its finish is written: the downloads' root.
    public var directory: String
    /// Its downloads, in the order they were added: the first answered the add (aria2's
    /// `followedBy` lists the others, each of which is `following` it).
    public var members: [DownloadID]
    /// The files its finish names (a member's file, or one that was in place already).
    public var files: [File]
    /// What is written once every member completed; nil when nothing is (an `s3://` prefix).
    public var finish: ContentFinish?
    /// Where it stands.
    public var state: State
    /// Why its last finish failed (`failed`); nil otherwise.
    public var error: String?
    /// When it was made, in seconds since 1970.
    public var createdAt: Int64

    /// A waiting group of `members`, completed by `finish` into `directory`.
    public init(
        id: GroupID, name: String, directory: String, members: [DownloadID], files: [File] = [],
        finish: ContentFinish? = nil, createdAt: Int64
    ) {
        self.id = id
        self.name = name
        self.directory = directory
        self.members = members
        self.files = files
        self.finish = finish
        self.state = .waiting
        self.createdAt = createdAt
    }

    /// Groups oldest first (then by id): the order every store lists them in.
    public static func oldestFirst(_ groups: [DownloadGroup]) -> [DownloadGroup] {
        groups.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// The download that answered the add (aria2's leader of `followedBy`); nil for no members.
    public var leader: DownloadID? { members.first }

    /// aria2's `followedBy` of `id`: the other members when `id` leads, else none.
    public func followedBy(_ id: DownloadID) -> [DownloadID] {
        id == leader ? members.filter { $0 != id } : []
    }

    /// aria2's `following` of `id`: the leader, when `id` is another member.
    public func following(_ id: DownloadID) -> DownloadID? {
        guard let leader, leader != id, members.contains(id) else { return nil }
        return leader
    }
}

/// What the stores keep of groups (`DownloadStore`'s group part). A store that keeps none (a
/// library user's, written before groups) refuses to save one, so a name of content is refused
/// rather than left without its finish.
extension DownloadGroup {
    /// The refusal of a store that keeps no groups.
    public static var unsupported: HaulError {
        HaulError(.unsupportedScheme, "this state store keeps no groups of downloads (names of content)")
    }
}
