import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a download on disk: `NAME.part` while bytes arrive, `NAME` once verified
/// (DESIGN rule 4). Names are sanitised, and every file is opened, published and removed
/// through its `DownloadDirectory`, so nothing is written outside the allowed directories.
enum DestinationFiles {
    static let partSuffix = ".part"

    static func finalPath(_ record: DownloadRecord) -> String? {
        record.finalPath
    }

    /// A completed download's file as found on disk, for a re-add to judge (`DownloadQueue.readd`):
    /// its path and size, read on the shared thread pool; nil for a download that has not
    /// completed or has no name.
    static func completedFile(_ record: DownloadRecord) async throws -> DownloadQueue.FinalFile? {
        guard record.status == .completed, let path = finalPath(record) else { return nil }
        return DownloadQueue.FinalFile(path: path, size: try await BlockingIO.run { size(path) })
    }

    static func join(_ directory: String, _ name: String) -> String {
        Paths.join(directory, name)
    }

    /// Size of a regular file, nil when missing.
    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// The name of the download's `.part` in its directory, once it has a name.
    static func partName(_ record: DownloadRecord) -> String? {
        record.fileName.map { $0 + partSuffix }
    }

    /// Removes the download's `.part`, and its final file too when `final` is set, through its
    /// directory opened beneath `roots` (never through a link that replaced a directory since).
    /// A directory that is gone has nothing to remove.
    static func remove(_ record: DownloadRecord, final: Bool, roots: [String]?) throws {
        guard let name = record.fileName,
            let directory = try DownloadDirectory.resolve(record.request.directory, roots: roots, create: false)
        else { return }
        try directory.remove(name + partSuffix)
        if final { try directory.remove(name) }
    }
}
