import CFileClone
import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file made from another's bytes without fetching them, the cheapest way the file system
/// allows, in this order: a reflink (the blocks shared, copy-on-write: Btrfs, XFS), a hard link
/// (the same inode), a copy. Always from an open descriptor, never by path: the file linked is
/// the one the caller opened (and checked), not whatever holds its name by then.
public enum FileClone {
    /// How the new file got its bytes.
    public enum Method: String, Sendable, Hashable {
        /// The blocks are shared, copy-on-write: an edit of one never shows in the other.
        case reflink
        /// The same inode under a second name: an edit of one is an edit of both.
        case hardLink = "hard link"
        /// Every byte copied.
        case copy
    }

    /// Makes `name` in the directory `directory` (a descriptor; `path` names it in errors) a file
    /// with the bytes of the open regular file `source`; a hard link only when `hardLink` allows
    /// it (a user's file and its twin must not become one inode: an edit of one would change
    /// both). `name` must not exist. Blocks: call it on a file thread.
    static func make(_ name: String, in directory: Int32, path: String, from source: Int32, hardLink: Bool) throws
        -> Method
    {
        let target = try create(name, in: directory, path: path)
        if haul_clone_file(target, source) == 0 {
            close(target)
            return .reflink
        }
        close(target)
        unlinkat(directory, name, 0)
        if hardLink, link(source, as: name, in: directory) { return .hardLink }
        let copy = try create(name, in: directory, path: path)
        defer { close(copy) }
        do {
            try copyBytes(from: source, to: copy, path: Paths.join(path, name))
        } catch {
            unlinkat(directory, name, 0)
            throw error
        }
        return .copy
    }

    private static func create(_ name: String, in directory: Int32, path: String) throws -> Int32 {
        let file = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard file >= 0 else { throw FileSystemErrors.error(errno, "cannot create", Paths.join(path, name)) }
        return file
    }

    /// A second name for the open file itself: through `/proc/self/fd` on Linux, which names
    /// the inode opened. False where the file system refuses (another device, no hard links, too
    /// many links): the caller copies instead.
    private static func link(_ source: Int32, as name: String, in directory: Int32) -> Bool {
        #if os(Linux)
            return linkat(AT_FDCWD, "/proc/self/fd/\(source)", directory, name, AT_SYMLINK_FOLLOW) == 0
        #else
            return false
        #endif
    }

    /// Copies every byte of `source` from its start, in the kernel where it can.
    private static func copyBytes(from source: Int32, to target: Int32, path: String) throws {
        guard lseek(source, 0, SEEK_SET) == 0 else { throw FileSystemErrors.error(errno, "cannot read", path) }
        while true {
            let copied = haul_copy_range(source, target, 1 << 30)
            if copied > 0 { continue }
            if copied == 0 { return }
            if errno == EINTR { continue }
            // EXDEV on old kernels, ENOSYS, EINVAL, EOPNOTSUPP: copy through a buffer instead.
            if errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP {
                throw FileSystemErrors.error(errno, "cannot copy into", path)
            }
            break
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(source, buffer.baseAddress, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FileSystemErrors.error(errno, "cannot read the copy for", path) }
            if count == 0 { return }
            var written = 0
            while written < count {
                let wrote = write(target, buffer.baseAddress! + written, count - written)
                if wrote < 0, errno == EINTR { continue }
                guard wrote > 0 else { throw FileSystemErrors.error(errno, "cannot write", path) }
                written += wrote
            }
        }
    }
}
