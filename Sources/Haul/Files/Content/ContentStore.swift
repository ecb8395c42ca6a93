import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files kept by their digest (`--content-store DIR`), for every download whose request names
/// a SHA-256 or SHA-512 (`Checksum.Algorithm.identifiesContent`): `DIR/sha-256/HEX`, each
/// read-only (0444). A download that completes puts its file there (`keep`: a reflink, a hard
/// link or a copy of it); a download of a digest the store has links that file instead of
/// fetching it, once it has checked it against the digest (`DigestCopies`). So a destination
/// edited in place (a hard link shares its inode with the store's file) is found out before its
/// bytes are used again, and the store's file is dropped, never linked.
public struct ContentStore: Sendable, Hashable {
    /// The store's directory, absolute.
    public let root: String

    /// The store in `root` (created at the first file kept).
    public init(root: String) {
        self.root = root
    }

    /// Makes the store's directory if it is missing and checks that files can be made in it: a
    /// store that cannot be written is said at the start, not found out file by file.
    ///
    /// - Throws: `.fileSystem` naming the directory and the reason.
    public func prepare() throws(HaulError) {
        try Directories.create(root, what: "content store")
        guard access(root, W_OK | X_OK) == 0 else {
            throw FileSystemErrors.error(errno, "cannot write in the content store", root)
        }
    }

    /// Where the store keeps the file with `checksum`.
    public func path(for checksum: Checksum) -> String {
        Paths.join(Paths.join(root, checksum.algorithm.rawValue), checksum.hex)
    }

    /// Keeps the published file `name` in `directory`, whose bytes were verified against
    /// `checksum`, unless the store has that digest already: made under a temporary name, made
    /// read-only and synced, then renamed into place (a kill never leaves a partial file under a
    /// digest's name). Returns how, nil when the store had it. Blocks: call it on a file thread.
    func keep(_ name: String, in directory: DownloadDirectory, as checksum: Checksum) throws -> FileClone.Method? {
        let folderPath = Paths.join(root, checksum.algorithm.rawValue)
        guard let folder = try DownloadDirectory.resolve(folderPath, roots: nil, create: true) else {
            throw HaulError(.fileSystem, "cannot create the content store's \(folderPath)")
        }
        if folder.status(of: checksum.hex) != nil { return nil }
        let source = try directory.openFile(name, flags: O_RDONLY)
        defer { close(source) }
        let temporary = ".\(checksum.hex).\(getpid()).tmp"
        try folder.remove(temporary)
        let method = try FileClone.make(
            temporary, in: folder.descriptor, path: folderPath, from: source, hardLink: true)
        do {
            guard fchmodat(folder.descriptor, temporary, 0o444, 0) == 0 else {
                throw FileSystemErrors.error(errno, "cannot make read-only", Paths.join(folderPath, temporary))
            }
            try folder.syncFile(temporary)
            guard renameat(folder.descriptor, temporary, folder.descriptor, checksum.hex) == 0 else {
                throw FileSystemErrors.error(errno, "cannot name", path(for: checksum))
            }
        } catch {
            try? folder.remove(temporary) // the error thrown is the one that matters
            throw error
        }
        try folder.sync()
        return method
    }

    /// Takes the store's file for `checksum` out: it no longer has that digest (edited through a
    /// hard link). Blocks.
    func drop(_ checksum: Checksum) throws {
        let folderPath = Paths.join(root, checksum.algorithm.rawValue)
        guard let folder = try DownloadDirectory.resolve(folderPath, roots: nil, create: false) else { return }
        try folder.remove(checksum.hex)
    }
}

/// A file made from another already on this machine with the digest a download names, instead
/// of fetched: the candidate is opened (never through a link), read whole against the digest,
/// and only then cloned from that same descriptor (`FileClone`).
enum DigestCopies {
    /// A file that may have the digest.
    struct Candidate: Sendable, Hashable {
        /// Where.
        var path: String
        /// Whether the copy may be a hard link to it: the content store's read-only file may be
        /// shared; a user's file (a twin's) may not.
        var hardLink: Bool
    }

    /// What a copy found and made.
    struct Copied: Sendable, Hashable {
        /// The file's length.
        var length: Int64
        /// The candidate it was made from.
        var source: String
        /// How.
        var method: FileClone.Method
    }

    /// The first of `candidates` (paths) that is a regular file with `checksum`, cloned as `name`
    /// in `directory` (a file left there by an interrupted copy is replaced); nil when none is.
    /// Candidates that were there with another digest are added to `mismatched`. Blocks.
    static func copy(
        _ checksum: Checksum, from candidates: [Candidate], into directory: DownloadDirectory, name: String,
        mismatched: inout [String], stopped: () -> Bool
    ) throws -> Copied? {
        for candidate in candidates {
            guard let (file, length) = try openRegular(candidate.path) else { continue }
            let scan = try Verifier.Scan(
                of: file, path: candidate.path, whole: checksum.algorithm, pieces: nil, stopped: stopped)
            guard scan.whole == checksum.hex else {
                mismatched.append(candidate.path)
                continue
            }
            try directory.remove(name)
            let method = try FileClone.make(
                name, in: directory.descriptor, path: directory.path, from: file.descriptor,
                hardLink: candidate.hardLink)
            return Copied(length: length, source: candidate.path, method: method)
        }
        return nil
    }

    /// Whether the file at `path` has `checksum`: false when it is missing, not a regular file
    /// or has another digest. Blocks.
    static func matches(_ path: String, _ checksum: Checksum) throws -> Bool {
        guard let (file, _) = try openRegular(path) else { return false }
        return try Verifier.Scan(of: file, path: path, whole: checksum.algorithm, pieces: nil, stopped: { false })
            .whole == checksum.hex
    }

    /// The regular file at `path`, opened for reading without following a link, and its length;
    /// nil when there is none (missing, a link, a directory). Any other failure is thrown.
    private static func openRegular(_ path: String) throws -> (Verifier.OpenFile, Int64)? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if [ENOENT, ENOTDIR, ELOOP, EISDIR].contains(errno) { return nil }
            throw FileSystemErrors.error(errno, "cannot open", path)
        }
        let file = Verifier.OpenFile(descriptor: descriptor)
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileSystemErrors.error(errno, "cannot read", path) }
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (file, Int64(info.st_size))
    }
}

/// Files already in place, by their digest.
public enum PresentFiles {
    /// Whether the regular file at `path` (no link followed) has `checksum`: a file a name of
    /// content resolved to that is already in place (an image's blob another image shares) is
    /// not fetched again. False for a missing or different file; a file that cannot be read is
    /// fetched, and its own error told then.
    public static func has(_ checksum: Checksum, at path: String) async -> Bool {
        do {
            return try await BlockingIO.run { try DigestCopies.matches(path, checksum) }
        } catch {
            return false
        }
    }
}
