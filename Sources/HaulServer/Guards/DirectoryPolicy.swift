#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HaulAPI
import HaulCore

/// Where the daemon may write: under its download directory (`-d`) and the directories given
/// with `--allow-dir`, nowhere else. Anyone holding the token could otherwise have files written
/// into any directory the daemon's user can write (`~/.config/autostart`, `~/.ssh`).
///
/// A path is checked twice: as written (normalised, so `..` cannot climb out) and as the
/// filesystem resolves it (the deepest existing ancestor through `realpath`), so a symbolic
/// link inside an allowed directory cannot lead out of it either.
public struct DirectoryPolicy: Sendable, Hashable {
    public let roots: [String]

    public init(roots: [String]) {
        self.roots = roots.map(AddRequest.normalized)
    }

    /// Throws `forbidden` unless `directory` (absolute) is inside one of the roots.
    public func check(_ directory: String) throws(HaulError) {
        let normalized = AddRequest.normalized(directory)
        guard allows(normalized) else {
            let list = roots.joined(separator: ", ")
            throw HaulError(.forbidden, "directory \(normalized) is outside the daemon's download directories (\(list)); start 'haul serve' with --allow-dir to allow it")
        }
    }

    /// Throws `forbidden` unless the file `path` (absolute) is inside one of the roots, as
    /// written and as its links resolve: a file a client names for the daemon to read
    /// (aria2's `load-cookies`), refused in the words of `option`.
    public func checkFile(_ path: String, option: String) throws(HaulError) {
        guard path.hasPrefix("/") else { throw HaulError(.badRequest, "\(option) must be an absolute path: \(path)") }
        let normalized = AddRequest.normalized(path)
        guard allows(normalized) else {
            let list = roots.joined(separator: ", ")
            throw HaulError(.forbidden, "\(option): \(normalized) is outside the daemon's download directories (\(list)); "
                + "the daemon reads such a file only from one of them")
        }
    }

    /// Inside a root as written (normalised) and as the filesystem resolves it.
    func allows(_ normalized: String) -> Bool {
        roots.contains { Paths.isInside(normalized, $0) }
            && roots.contains { root in Paths.isInside(Self.resolved(normalized), Self.resolved(root)) }
    }

    /// The real path of the deepest existing ancestor, with the rest appended.
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [Substring] = []
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                let base = String(cString: real)
                return rest.isEmpty ? base : Paths.join(base, rest.reversed().joined(separator: "/"))
            }
            guard existing != "/", let slash = existing.lastIndex(of: "/") else { return path }
            rest.append(existing[existing.index(after: slash)...])
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
    }
}
