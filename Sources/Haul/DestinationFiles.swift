#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HaulCore

/// The files of a download on disk: `NAME.part` while bytes arrive, `NAME` once verified
/// (DESIGN rule 4). Every path is built from the record's directory and a sanitised name, so
/// nothing is ever written outside the destination directory.
enum DestinationFiles {
    static let partSuffix = ".part"

    static func finalPath(_ record: DownloadRecord) -> String? {
        record.finalPath
    }

    static func partPath(_ record: DownloadRecord) -> String? {
        finalPath(record).map { $0 + partSuffix }
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

    /// Creates the directory and its parents, like `mkdir -p`.
    static func makeDirectory(_ path: String) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw HaulError(.fileSystem, "\(path) is not a directory")
            }
            return
        }
        let (parent, _) = splitParent(path)
        if let parent, parent != path { try makeDirectory(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw FileSystemErrors.error(errno, "cannot create directory", path)
        }
    }

    static func splitParent(_ path: String) -> (String?, String) {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return (nil, String(trimmed)) }
        let parent = trimmed[..<slash]
        return (parent.isEmpty ? "/" : String(parent), String(trimmed[trimmed.index(after: slash)...]))
    }

    /// Moves the verified `.part` to its final name without replacing anything already there:
    /// `link` fails on an existing name where `rename` would silently overwrite it.
    static func publish(part: String, final: String) throws {
        if link(part, final) == 0 {
            unlink(part)
        } else {
            let linkError = errno
            if linkError == EEXIST { throw HaulError(.fileExists, "\(final) already exists; the download stays in \(part)") }
            // File systems without hard links: check, then rename.
            guard !exists(final) else { throw HaulError(.fileExists, "\(final) already exists; the download stays in \(part)") }
            guard rename(part, final) == 0 else { throw FileSystemErrors.error(errno, "cannot rename \(part) to", final) }
        }
        syncDirectory(of: final)
    }

    /// Whether `publish` already ran for these files although the record was never stored as
    /// completed (a crash between the two): the final file is the `.part` itself (the hard link
    /// was made but the `.part` name not yet removed), or the `.part` is gone and a final file
    /// of exactly the verified length stands in its place.
    static func wasPublished(part: String, final: String, length: Int64) -> Bool {
        var finalInfo = stat()
        guard stat(final, &finalInfo) == 0, Int64(finalInfo.st_size) == length else { return false }
        var partInfo = stat()
        guard stat(part, &partInfo) == 0 else { return errno == ENOENT }
        return partInfo.st_ino == finalInfo.st_ino && partInfo.st_dev == finalInfo.st_dev
    }

    /// Finishes an interrupted `publish`: drops a `.part` name still linked to the final file.
    static func finishPublish(part: String, final: String) {
        if wasPublished(part: part, final: final, length: size(final) ?? -1), exists(part) { unlink(part) }
        syncDirectory(of: final)
    }

    /// Makes a rename durable: the directory entry lives in the directory, not the file.
    static func syncDirectory(of path: String) {
        let (parent, _) = splitParent(path)
        let descriptor = open(parent ?? ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    static func remove(_ path: String) {
        unlink(path)
    }
}
