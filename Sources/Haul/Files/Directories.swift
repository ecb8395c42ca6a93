import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one way haul makes a directory it needs, as `mkdir -p` does: the state directory
/// (`haul get`'s and the daemon's) and its progress notes, the daemon's download and allowed
/// directories, a download's root. (Directories below a root are made one component at a time
/// by `DownloadDirectory`, which must not follow links.)
public enum Directories {
    /// Makes `path` and its missing parents; a directory that exists is left as it is.
    /// - Parameters:
    ///   - path: the directory, absolute.
    ///   - what: how the error names it (`state directory`).
    ///   - isPrivate: a directory this call makes is 0700 (the state keeps headers, cookies and
    ///     tokens); one that exists keeps its mode.
    /// - Throws: `.fileSystem` (`.diskFull` when the disk is) naming the path and the reason,
    ///   or that something there is not a directory.
    public static func create(_ path: String, what: String = "directory", isPrivate: Bool = false) throws(HaulError) {
        switch FileKind(path) {
        case .directory: return
        case .file: throw HaulError(.fileSystem, "the \(what) \(path) is not a directory")
        case .missing: break
        }
        let parent = Paths.split(path).directory
        if parent != path {
            do {
                try create(parent, what: what)
            } catch {
                throw HaulError(error.code, "cannot create the \(what) \(path): \(error.message)", cause: error.cause)
            }
        }
        if mkdir(path, isPrivate ? 0o700 : 0o755) != 0 {
            guard errno == EEXIST else { throw FileSystemErrors.error(errno, "cannot create the \(what)", path) }
            return // made by someone else meanwhile
        }
        // mkdir's mode passes through the umask: private means exactly 0700.
        if isPrivate, chmod(path, 0o700) != 0 {
            throw FileSystemErrors.error(errno, "cannot make private the \(what)", path)
        }
    }
}
