import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small files haul writes whole beneath a download root (an image layout's `index.json`, a
/// manifest): no link followed, written to a temporary name, synced, then renamed over the old
/// one and the directory synced, so a reader sees the old file or the new one, never half.
enum SmallFiles {
    /// The bytes of `relative` beneath `root`, nil when there is no such file.
    static func read(_ relative: String, beneath root: String, maxBytes: Int) throws(HaulError) -> [UInt8]? {
        let path = Paths.join(root, relative)
        let (folder, name) = Paths.split(path)
        do {
            guard let name, let directory = try DownloadDirectory.resolve(folder, roots: [root], create: false),
                directory.status(of: name) != nil
            else { return nil }
            return try ConfinedFile.readNow(path, roots: [root], maxBytes: maxBytes)
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }

    /// Writes `bytes` as `relative` beneath `root` (missing directories made).
    static func write(_ bytes: [UInt8], to relative: String, beneath root: String) throws(HaulError) {
        let path = Paths.join(root, relative)
        let (folder, name) = Paths.split(path)
        do {
            guard let name, let directory = try DownloadDirectory.resolve(folder, roots: [root], create: true) else {
                throw HaulError(.fileSystem, "cannot write \(path): no such directory")
            }
            let temporary = name + ".haul-tmp"
            let file = try directory.openFile(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
            defer { close(file) }
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw FileSystemErrors.error(errno, "cannot write", Paths.join(folder, temporary))
                }
                offset += written
            }
            guard fsync(file) == 0 else {
                throw FileSystemErrors.error(errno, "cannot sync", Paths.join(folder, temporary))
            }
            try directory.replace(part: temporary, final: name)
            try directory.sync()
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }

    /// Makes `relative` beneath `root` a symbolic link to `target` (relative to the link's
    /// folder), replacing a link already there; missing directories made.
    static func link(_ relative: String, to target: String, beneath root: String) throws(HaulError) {
        let path = Paths.join(root, relative)
        let (folder, name) = Paths.split(path)
        do {
            guard let name, let directory = try DownloadDirectory.resolve(folder, roots: [root], create: true) else {
                throw HaulError(.fileSystem, "cannot link \(path): no such directory")
            }
            let temporary = name + ".haul-tmp"
            _ = unlinkat(directory.descriptor, temporary, 0)
            guard symlinkat(target, directory.descriptor, temporary) == 0 else {
                throw FileSystemErrors.error(errno, "cannot make the link", Paths.join(folder, temporary))
            }
            guard renameat(directory.descriptor, temporary, directory.descriptor, name) == 0 else {
                throw FileSystemErrors.error(errno, "cannot rename the link to", path)
            }
            try directory.sync()
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }
}
