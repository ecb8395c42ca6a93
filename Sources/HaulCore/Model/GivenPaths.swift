/// Names haul keeps as they are given, unlike a name a server suggests (`FileNameSanitizer`,
/// which drops a leading dot from a `Content-Disposition` name): a path from a content listing
/// (the Hub's files, an S3 key), each segment a folder's or a file's name beneath the download
/// directory, dot files and dot folders included; and the user's own output name (`-o`, an
/// API's `fileName`), taken as typed as curl and wget take it.
public enum GivenPaths {
    /// Why `segment` cannot be the name of a file or a folder beneath a directory (empty, `.`
    /// or `..`, a NUL or another control character, longer than `FileNameSanitizer.maxBytes`
    /// bytes, so that `NAME.part` fits the 255-byte limit), nil when it can. A `/` is no part of
    /// a segment: the caller splits there.
    public static func segmentProblem(_ segment: Substring) -> String? {
        if segment.isEmpty { return "an empty segment" }
        if segment == "." || segment == ".." { return "a '\(segment)' segment" }
        if segment.unicodeScalars.contains(where: isControl) { return "a NUL or control character" }
        if segment.utf8.count > FileNameSanitizer.maxBytes {
            return "a segment of \(segment.utf8.count) bytes (at most \(FileNameSanitizer.maxBytes))"
        }
        return nil
    }

    /// Why a listed `path` (relative, `/` between segments) names no file beneath the download
    /// directory, nil when it does: the first of its segments' problems.
    public static func listedProblem(_ path: String) -> String? {
        if path.hasPrefix("/") { return "an absolute path" }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            if let problem = segmentProblem(segment) { return problem }
        }
        return nil
    }

    /// Why the user's own output name cannot be a file's name, nil when it can: only `.`, `..`,
    /// a NUL and a name too long for `NAME.part` (the caller splits the path at its last `/`,
    /// so an empty name is a directory's path).
    public static func outputNameProblem(_ name: String) -> String? {
        if name == "." || name == ".." || name.utf8.contains(0) { return "output file name '\(name)' is not allowed" }
        if name.utf8.count > FileNameSanitizer.maxBytes {
            return "output file name is \(name.utf8.count) bytes long; at most \(FileNameSanitizer.maxBytes) "
                + "are allowed, so that NAME.part fits the 255-byte limit of file names"
        }
        return nil
    }

    /// A C0 or C1 control character, or DEL.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value)
    }
}

/// A path of a content listing left out because it names no file beneath the directory: the
/// rest of the listing is fetched, and this is told in one line.
public struct SkippedPath: Sendable, Equatable {
    /// What the listing calls its entries: `key` (S3), `file` (the Hub).
    public var kind: String
    /// The entry as listed.
    public var path: String
    /// Why it was left out (`GivenPaths.listedProblem`).
    public var problem: String

    /// A skipped entry from its parts.
    public init(kind: String, path: String, problem: String) {
        self.kind = kind
        self.path = path
        self.problem = problem
    }

    /// The line that tells it: `skipped the key 'a/../b': it names no file beneath the
    /// directory (a '..' segment)`; a control character shown as `\x01`, never sent to the
    /// terminal.
    public var message: String {
        var shown = ""
        for scalar in path.unicodeScalars {
            if GivenPaths.isControl(scalar) {
                let hex = String(scalar.value, radix: 16)
                shown += "\\x" + (hex.count < 2 ? "0" : "") + hex
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return "skipped the \(kind) '\(shown)': it names no file beneath the directory (\(problem))"
    }
}
