import HaulCore

/// Groups of downloads as callers see them: a download's groups (aria2's `followedBy` and
/// `following`), the unfinished ones, and a group adopted from files already being downloaded.
extension DownloadManager {
    /// The groups `id` is a member of, oldest first.
    public func groups(containing id: DownloadID) async throws -> [DownloadGroup] {
        try await store.groups(containing: id)
    }

    /// The group `id`, as stored; nil when there is none.
    public func group(_ id: GroupID) async throws -> DownloadGroup? {
        try await store.group(id)
    }

    /// Every group, oldest first.
    public func groups() async throws -> [DownloadGroup] {
        try await store.allGroups()
    }

    /// Every group not finished (waiting, or whose finish failed), oldest first.
    public func unfinishedGroups() async throws -> [DownloadGroup] {
        try await store.unfinishedGroups()
    }

    /// Keeps `group` with the downloads that hold its files (by name in its directory) as its
    /// members: a finish an older daemon kept on disk, made a group before `restore()`, which
    /// checks it. A file no download holds counts as in place.
    public func adopt(_ group: DownloadGroup) async throws {
        let places = group.files.map { file in
            let (folder, name) = Paths.split(Paths.join(group.directory, file.path))
            return FileNamePlace(directory: folder, fileName: name ?? file.path)
        }
        let holders = try await store.fileNameHolders(places)
        var adopted = group
        var seen: Set<DownloadID> = []
        adopted.members = places.compactMap { holders[$0] }.filter { seen.insert($0).inserted }
        try await store.saveGroup(adopted)
    }
}
