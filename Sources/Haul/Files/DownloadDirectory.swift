import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A download's directory, opened beneath the root it is allowed in, at the moment it is used.
///
/// Every file of a download (`NAME.part`, `NAME`) is opened, created, linked and removed
/// relative to this descriptor, never by path, and no symbolic link is followed beneath the
/// root: each directory below it is opened with `O_NOFOLLOW` (created with `mkdirat` when
/// missing), and each file with `O_NOFOLLOW` too. A directory swapped for a link after a
/// download was added, or a `NAME.part` planted as a link, cannot lead a write out of the root.
///
/// The root itself is trusted as given: the daemon's `-d` and `--allow-dir` (which its operator
/// chose), or, for `haul get` and a library user who sets no roots, the download's directory
/// itself (which the user typed; a `~/Downloads` that is a link to another disk still works).
///
/// Every method makes system calls that a slow disk can hold up: call them on a run's `DiskIO`
/// (or through `BlockingIO`), never on Swift's cooperative pool.
final class DownloadDirectory: Sendable {
    /// The directory as the record names it, for messages.
    let path: String
    let descriptor: Int32
    /// The directory itself (device and inode), as it was opened; nil if it could not be stat'ed.
    let identity: Identity?

    struct Identity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
        var info = stat()
        identity =
            fstat(descriptor, &info) == 0 ? Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) : nil
    }

    deinit { close(descriptor) }

    /// Opens `path` beneath the root of `roots` that contains it (the longest), creating
    /// missing directories when `create` is set. Returns nil when a directory is missing and
    /// `create` is not set. Throws `forbidden` when `path` is beneath none of the roots or a
    /// component below the root is a symbolic link. With no roots, `path` is its own root.
    static func resolve(_ path: String, roots: [String]?, create: Bool) throws -> DownloadDirectory? {
        let normalized = normalize(path)
        let root: String
        if let roots {
            guard
                let containing = roots.map(normalize).filter({ Paths.isInside(normalized, $0) }).max(by: {
                    $0.count < $1.count
                })
            else {
                throw HaulError(
                    .forbidden, "\(path) is outside the allowed download directories (\(roots.joined(separator: ", ")))"
                )
            }
            root = containing
        } else {
            root = normalized
        }
        if create { try Directories.create(root) }
        var current = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard current >= 0 else {
            if errno == ENOENT, !create { return nil }
            if errno == ENOTDIR {
                throw HaulError(.fileSystem, "\(root) is not a directory (or a part of its path is a file)")
            }
            throw FileSystemErrors.error(errno, "cannot open directory", root)
        }
        var walked = root
        for component in components(of: normalized, below: root) {
            walked = Paths.join(walked, component)
            guard component != ".." else {
                close(current)
                throw HaulError(.forbidden, "\(path) climbs out of \(root) with '..'")
            }
            var next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT {
                guard create else {
                    close(current)
                    return nil
                }
                if mkdirat(current, component, 0o755) != 0, errno != EEXIST {
                    let error = errno
                    close(current)
                    throw FileSystemErrors.error(error, "cannot create directory", walked)
                }
                next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            if next < 0 {
                let error = errno
                let isLink = status(of: component, in: current)?.fileType == S_IFLNK
                close(current)
                if isLink {
                    throw HaulError(
                        .forbidden,
                        "\(walked) is a symbolic link: haul follows no link beneath its download directory \(root)")
                }
                throw FileSystemErrors.error(error, "cannot open directory", walked)
            }
            close(current)
            current = next
        }
        return DownloadDirectory(path: normalized, descriptor: current)
    }

    /// Opens the regular file `name` in this directory, never through a link, and, for writing,
    /// never one with other hard links (a `.part` linked to a file elsewhere would write into it).
    /// `exclusive` creates it and fails if it exists.
    func openFile(_ name: String, flags: Int32, exclusive: Bool = false) throws -> Int32 {
        let path = Paths.join(self.path, name)
        var flags = flags | O_NOFOLLOW | O_CLOEXEC
        if exclusive { flags |= O_CREAT | O_EXCL }
        let file = openat(descriptor, name, flags, 0o644)
        guard file >= 0 else {
            let error = errno
            if status(of: name)?.fileType == S_IFLNK {
                throw HaulError(
                    .forbidden, "\(path) is a symbolic link: haul does not follow links in download directories")
            }
            if error == EEXIST, exclusive {
                throw HaulError(
                    .fileExists,
                    "\(path) appeared while the download started: another download or program uses this name")
            }
            throw FileSystemErrors.error(error, "cannot open", path)
        }
        var info = stat()
        guard fstat(file, &info) == 0 else {
            let error = errno
            close(file)
            throw FileSystemErrors.error(error, "cannot inspect", path)
        }
        guard info.fileType == S_IFREG else {
            close(file)
            throw HaulError(.forbidden, "\(path) is not a regular file; haul writes only to its own files")
        }
        // Reading is harmless: a published file is briefly linked to its `.part` as well.
        guard info.st_nlink <= 1 || (flags & O_ACCMODE) == O_RDONLY else {
            close(file)
            throw HaulError(
                .forbidden, "\(path) has other hard links; haul will not write into a file that is also elsewhere")
        }
        return file
    }

    /// Makes the bytes of the regular file `name` durable (opened read-only, no link followed).
    func syncFile(_ name: String) throws {
        let descriptor = try openFile(name, flags: O_RDONLY)
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw FileSystemErrors.error(errno, "cannot sync", Paths.join(path, name)) }
    }

    /// The status of `name` itself (a link is not followed); nil when it does not exist.
    func status(of name: String) -> stat? {
        Self.status(of: name, in: descriptor)
    }

    static func status(of name: String, in directory: Int32) -> stat? {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return info
    }

    /// The size of the regular file `name`; nil when missing or not a regular file.
    func size(of name: String) -> Int64? {
        guard let info = status(of: name), info.fileType == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Gives the verified `.part` its final name without replacing anything already there
    /// (`linkat` fails on an existing name where `rename` would overwrite it), then checks that
    /// the final name is the very file that was verified: a `.part` swapped for a link between
    /// the two is refused and its new name taken back. The new entry is not synced here: the
    /// caller makes it durable (`DirectorySyncs`) before anyone is told.
    func link(part: String, final: String) throws {
        let finalPath = Paths.join(path, final)
        let partPath = Paths.join(path, part)
        guard let before = status(of: part), before.fileType == S_IFREG else {
            throw HaulError(
                .forbidden, "\(partPath) is no longer the regular file haul wrote; the download is not published")
        }
        if linkat(descriptor, part, descriptor, final, 0) == 0 {
            guard let after = status(of: final), after.st_ino == before.st_ino, after.st_dev == before.st_dev else {
                guard unlinkat(descriptor, final, 0) == 0 || errno == ENOENT else {
                    throw HaulError(
                        .forbidden,
                        "\(partPath) changed while it was published, and its new name \(finalPath) "
                            + "cannot be taken back (\(String(cString: strerror(errno)))): remove it by hand")
                }
                throw HaulError(.forbidden, "\(partPath) changed while it was published; the download is not published")
            }
            try remove(part)
        } else {
            let linkError = errno
            if linkError == EEXIST {
                throw HaulError(.fileExists, "\(finalPath) already exists; the download stays in \(partPath)")
            }
            // File systems without hard links: check, then rename.
            guard status(of: final) == nil else {
                throw HaulError(.fileExists, "\(finalPath) already exists; the download stays in \(partPath)")
            }
            guard renameat(descriptor, part, descriptor, final) == 0 else {
                throw FileSystemErrors.error(errno, "cannot rename \(partPath) to", finalPath)
            }
        }
    }

    /// `-N`: gives the verified `.part` the final name over the older file there, in one
    /// `rename` (a reader sees the old file or the new one, never neither). Only a regular file
    /// is replaced: a link or a directory there is refused. Not synced here, as `link`.
    func replace(part: String, final: String) throws {
        let finalPath = Paths.join(path, final)
        let partPath = Paths.join(path, part)
        guard let before = status(of: part), before.fileType == S_IFREG else {
            throw HaulError(
                .forbidden, "\(partPath) is no longer the regular file haul wrote; the download is not published")
        }
        if let existing = status(of: final), existing.fileType != S_IFREG {
            throw HaulError(.fileExists, "\(finalPath) is not a regular file; the download stays in \(partPath)")
        }
        guard renameat(descriptor, part, descriptor, final) == 0 else {
            throw FileSystemErrors.error(errno, "cannot rename \(partPath) to", finalPath)
        }
    }

    /// The modification time (seconds since 1970) of the regular file `name`; nil when missing.
    func modificationTime(of name: String) -> Int64? {
        guard let info = status(of: name), info.fileType == S_IFREG else { return nil }
        return Int64(info.st_mtim.tv_sec)
    }

    /// Sets `name`'s access and modification times (not following a link).
    func setModificationTime(of name: String, to seconds: Int64) throws {
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        guard utimensat(descriptor, name, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw FileSystemErrors.error(errno, "cannot set the time of", Paths.join(path, name))
        }
    }

    /// Whether a publish (`link`) already ran although the record was never stored as completed (a crash
    /// between the two): the final file is the `.part` itself (linked, the `.part` name not yet
    /// removed), or the `.part` is gone and a regular final file of exactly `length` stands.
    func wasPublished(part: String, final: String, length: Int64) -> Bool {
        guard let finalInfo = status(of: final), finalInfo.fileType == S_IFREG,
            Int64(finalInfo.st_size) == length
        else { return false }
        guard let partInfo = status(of: part) else { return true }
        return partInfo.st_ino == finalInfo.st_ino && partInfo.st_dev == finalInfo.st_dev
    }

    /// Finishes an interrupted publish: drops a `.part` name still linked to the final file.
    /// Not synced here, as `link`.
    func finishPublish(part: String, final: String) throws {
        if let length = size(of: final), wasPublished(part: part, final: final, length: length), status(of: part) != nil
        {
            try remove(part)
        }
    }

    /// Removes the name `name` (a link itself, never what it points to); a missing one is fine.
    func remove(_ name: String) throws {
        guard unlinkat(descriptor, name, 0) == 0 || errno == ENOENT else {
            throw FileSystemErrors.error(errno, "cannot remove", Paths.join(path, name))
        }
    }

    /// Makes a new or renamed entry durable: the entry lives in the directory, not the file.
    func sync() throws {
        guard fsync(descriptor) == 0 else { throw FileSystemErrors.error(errno, "cannot sync directory", path) }
    }

    // MARK: Paths

    /// Without empty and `.` components; `..` is kept (and refused below a root). A relative
    /// path stays relative.
    static func normalize(_ path: String) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        let joined = parts.joined(separator: "/")
        if path.hasPrefix("/") { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// The components of `path` below `root` (both normalised, `path` inside `root`).
    static func components(of path: String, below root: String) -> [String] {
        let rest = root == "/" ? path.dropFirst() : path.dropFirst(root.count)
        return rest.split(separator: "/").map(String.init)
    }
}

extension stat {
    /// `S_IFREG`, `S_IFDIR`, `S_IFLNK`, ...
    var fileType: mode_t { st_mode & S_IFMT }
}
