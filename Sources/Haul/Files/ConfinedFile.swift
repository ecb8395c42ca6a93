import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a small file that a client names over the network (aria2's `load-cookies`), only
/// beneath the daemon's download roots and as strictly as downloads are written there: the
/// directory opened one component at a time without following a link (`DownloadDirectory`), the
/// file itself with `O_NOFOLLOW`, only a regular file (a FIFO would block the reader forever, a
/// device never end), at most `maxBytes`.
public enum ConfinedFile {
    /// The bytes of `path` (absolute), read on a thread of its own.
    /// - Throws: `forbidden` for a path outside `roots` or a link beneath the root, `too-large`
    ///   past `maxBytes`, `file-system` for a missing, unreadable or special file. Each names
    ///   the path.
    public static func read(_ path: String, roots: [String], maxBytes: Int) async throws -> [UInt8] {
        try await BlockingIO.run { try readNow(path, roots: roots, maxBytes: maxBytes) }
    }

    static func readNow(_ path: String, roots: [String], maxBytes: Int) throws -> [UInt8] {
        let (directoryPath, name) = Paths.split(path)
        guard path.hasPrefix("/"), let name, name != ".", name != ".." else {
            throw HaulError(.fileSystem, "\(path) does not name a file by an absolute path")
        }
        guard let directory = try DownloadDirectory.resolve(directoryPath, roots: roots, create: false) else {
            throw HaulError(.fileSystem, "cannot open \(path): \(String(cString: strerror(ENOENT)))")
        }
        let file = openat(directory.descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else {
            let error = errno
            if directory.status(of: name)?.fileType == S_IFLNK {
                throw HaulError(
                    .forbidden, "\(path) is a symbolic link: haul follows no link beneath its download directories")
            }
            throw FileSystemErrors.error(error, "cannot open", path)
        }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw FileSystemErrors.error(errno, "cannot inspect", path) }
        guard info.fileType == S_IFREG else { throw HaulError(.fileSystem, "\(path) is not a regular file") }
        let tooLarge = HaulError(.tooLarge, "\(path) is larger than \(maxBytes) bytes")
        guard Int64(info.st_size) <= Int64(maxBytes) else { throw tooLarge }
        // One byte more than allowed, so a file that grew since `fstat` is still caught.
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                readBytes(file, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FileSystemErrors.error(errno, "cannot read", path) }
            if count == 0 { break }
            filled += count
        }
        guard filled <= maxBytes else { throw tooLarge }
        return Array(bytes[..<filled])
    }
}

/// `read(2)`, under another name: inside `ConfinedFile`, `read` is its own method.
private func readBytes(_ file: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(file, buffer, count)
}
