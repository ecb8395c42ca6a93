import HaulCore

/// What a name of content expands to, the same for `haul get` and the daemon: the files to fetch
/// (one already in place with its digest is not fetched again: a digest is an identity), where
/// each goes beneath the downloads' root, and the group they make (`DownloadGroup`: every file the
/// name stands for, its finish, and where that is written), which the queue finishes once its
/// downloads completed.
public struct ContentExpansion: Sendable {
    /// The files to download, in the order the source listed them.
    public var files: [ResolvedFile]
    /// The group of their downloads (its members are filled in by the add).
    public var group: DownloadGroup
    /// Listed paths no file beneath a directory can have, skipped (each told once).
    public var skipped: [SkippedPath]

    /// `resolution` of `name` (as typed), beneath `base`. `namesOneFile`: the add names its one
    /// file itself (`haul get -o`, a REST or aria2 add's `fileName`/`out`): the name must stand
    /// for one file and no finish (a finish names files where the source put them), and that file
    /// is fetched even when one with its digest is in place; otherwise files in place with their
    /// digests are left out.
    public static func expand(
        _ resolution: ContentResolver.Resolution, name: String, into base: String, namesOneFile: Bool,
        createdAt: Int64
    ) async throws(HaulError) -> ContentExpansion {
        if namesOneFile, resolution.files.count > 1 || resolution.finish != nil {
            throw HaulError(
                .usage,
                "one file name was given, but \(name) stands for \(resolution.files.count) files"
                    + (resolution.finish == nil ? "" : " and what completes them"))
        }
        var files: [ResolvedFile] = []
        for file in resolution.files {
            // A digest is an identity: a file already in place with it is not fetched again.
            if !namesOneFile, let checksum = file.checksum,
                await PresentFiles.has(checksum, at: Paths.join(base, file.path))
            {
                continue
            }
            files.append(file)
        }
        let group = DownloadGroup(
            id: .random(), name: name, directory: base, members: [],
            files: resolution.files.map { DownloadGroup.File(path: $0.path, size: $0.size) }, finish: resolution.finish,
            createdAt: createdAt)
        return ContentExpansion(files: files, group: group, skipped: resolution.skipped)
    }

    /// Where `file` goes beneath `base`: the folder of its path, and its name.
    public static func destination(of file: ResolvedFile, beneath base: String) -> (directory: String, name: String?) {
        let (folder, name) = Paths.split(file.path)
        return (folder == "." ? base : Paths.join(base, folder), name)
    }
}
