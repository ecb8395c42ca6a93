#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a path names, from stat(2) (links followed): the check FileManager's
/// `fileExists(atPath:isDirectory:)` made, without Foundation.
public enum FileKind: Sendable, Equatable {
    /// Nothing there (a dangling link included), or a path stat(2) cannot reach (a parent
    /// directory that cannot be searched).
    case missing
    /// A directory, or a symbolic link to one.
    case directory
    /// A regular file, or anything else that is not a directory.
    case file

    /// What `path` names now; any failure of stat(2) reads as `.missing`.
    public init(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            self = .missing
            return
        }
        self = info.st_mode & S_IFMT == S_IFDIR ? .directory : .file
    }
}
