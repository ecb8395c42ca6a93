import HaulAPI
import HaulCore
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the daemon may write: under its download directory (`-d`) and the directories given
/// with `--allow-dir`, nowhere else. Anyone holding the token could otherwise have files written
/// into any directory the daemon's user can write (`~/.config/autostart`, `~/.ssh`).
///
/// A path is checked twice: as written (normalised, so `..` cannot climb out) and as the
/// filesystem resolves it (the deepest existing ancestor through `realpath`), so a symbolic
/// link inside an allowed directory cannot lead out of it either.
///
/// A resolution is reused for `ResolvedPaths.lifetime` (a batch of a thousand adds into one
/// directory costs one `realpath` per root and directory, not two per add); a run resolves its
/// directory beneath its root again whenever it uses it, so a link changed meanwhile still
/// leads nowhere.
public struct DirectoryPolicy: Sendable, Hashable {
    public let roots: [String]
    private let resolutions = ResolvedPaths()

    public init(roots: [String]) {
        self.roots = roots.map(AddRequest.normalized)
    }

    public static func == (a: DirectoryPolicy, b: DirectoryPolicy) -> Bool { a.roots == b.roots }
    public func hash(into hasher: inout Hasher) { hasher.combine(roots) }

    /// Throws `forbidden` unless `directory` (absolute) is inside one of the roots.
    public func check(_ directory: String) throws(HaulError) {
        let normalized = AddRequest.normalized(directory)
        guard allows(normalized) else {
            let list = roots.joined(separator: ", ")
            throw HaulError(
                .forbidden,
                """
                directory \(normalized) is outside the daemon's download directories (\(list)); start 'haul \
                serve' with --allow-dir to allow it
                """
            )
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
            throw HaulError(
                .forbidden,
                "\(option): \(normalized) is outside the daemon's download directories (\(list)); "
                    + "the daemon reads such a file only from one of them")
        }
    }

    /// Inside a root as written (normalised) and as the filesystem resolves it.
    func allows(_ normalized: String) -> Bool {
        guard roots.contains(where: { Paths.isInside(normalized, $0) }) else { return false }
        let real = resolutions.resolve(normalized)
        return roots.contains { root in Paths.isInside(real, resolutions.resolve(root)) }
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

/// Paths as `realpath` resolved them, each reused for `lifetime`.
final class ResolvedPaths: Sendable {
    static let lifetime = Duration.milliseconds(100)
    private let entries = NIOLockedValueBox([String: (real: String, at: ContinuousClock.Instant)]())

    func resolve(_ path: String) -> String {
        let now = ContinuousClock.now
        if let entry = entries.withLockedValue({ $0[path] }), now - entry.at < Self.lifetime { return entry.real }
        let real = DirectoryPolicy.resolved(path)
        entries.withLockedValue { entries in
            // Old entries go once there are many: a daemon sees few directories.
            if entries.count >= 256 { entries = entries.filter { now - $0.value.at < Self.lifetime } }
            entries[path] = (real, now)
        }
        return real
    }
}
