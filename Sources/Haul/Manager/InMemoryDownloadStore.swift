import HaulCore

/// A store that keeps records in memory only: for library users who want no state on disk,
/// and for tests of the engine that are not about persistence.
public actor InMemoryDownloadStore: DownloadStore {
    private var records: [DownloadID: DownloadRecord] = [:]
    private var groups: [GroupID: DownloadGroup] = [:]

    /// An empty store.
    public init() {}

    /// Keeps `record`, in place of any with its id.
    public func save(_ record: DownloadRecord) { records[record.id] = record }

    /// The record with `id`, whatever its status (removed too); nil when there is none.
    public func record(_ id: DownloadID) -> DownloadRecord? { records[id] }

    /// A live (not removed) record with the same `identity` as `request`; nil when there is none.
    /// With several, any one of them.
    public func record(matching request: DownloadRequest) -> DownloadRecord? {
        records.values.first { $0.status != .removed && $0.request.identity == request.identity }
    }

    /// The records with `status`, or (nil) every record, removed ones included; in queue order
    /// (priority, then position).
    public func records(status: DownloadStatus?) -> [DownloadRecord] {
        records.values
            .filter { status == nil || $0.status == status }
            .sorted { $0.runsBefore($1) }
    }

    /// A live record other than `id` whose file is `fileName` in `directory`; nil when none is.
    public func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) -> DownloadID? {
        records.values.first {
            $0.id != id && $0.status != .removed && $0.fileName == fileName && $0.request.directory == directory
        }?.id
    }

    /// Forgets the record `id` entirely; nothing happens when there is none.
    public func delete(_ id: DownloadID) { records[id] = nil }

    /// Keeps `group`, in place of any with its id.
    public func saveGroup(_ group: DownloadGroup) { groups[group.id] = group }

    /// The group with `id`; nil when there is none.
    public func group(_ id: GroupID) -> DownloadGroup? { groups[id] }

    /// The groups `id` is a member of, oldest first.
    public func groups(containing id: DownloadID) -> [DownloadGroup] {
        DownloadGroup.oldestFirst(groups.values.filter { $0.members.contains(id) })
    }

    /// The groups not finished, oldest first.
    public func unfinishedGroups() -> [DownloadGroup] {
        DownloadGroup.oldestFirst(groups.values.filter { $0.state != .finished })
    }

    /// Every group, oldest first.
    public func allGroups() -> [DownloadGroup] { DownloadGroup.oldestFirst(Array(groups.values)) }

    /// Forgets the group `id`.
    public func deleteGroup(_ id: GroupID) { groups[id] = nil }
}
