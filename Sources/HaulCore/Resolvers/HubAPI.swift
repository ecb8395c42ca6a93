/// What the Hugging Face Hub's API says, read without I/O, and where its files are: a revision's
/// commit and files (`GET /api/models/ORG/REPO/revision/REV?blobs=true`, as huggingface_hub's
/// `repo_info(files_metadata=True)` asks), the `/resolve/` URL of a file at a commit, which files
/// a path and `--include`/`--exclude` globs select, and the cache layout huggingface_hub reads.
public enum HubAPI {
    /// One file of a revision.
    public struct File: Sendable, Equatable {
        /// Its path in the repository (`sub/dir/notes.txt`).
        public var path: String
        /// Its length in bytes, when the API says.
        public var size: Int64?
        /// The SHA-256 of an LFS file's content.
        public var lfsSHA256: String?
        /// The git blob id (SHA-1 of `blob N\0` and the content).
        public var blobID: String?

        /// A file from its parts.
        public init(path: String, size: Int64?, lfsSHA256: String?, blobID: String?) {
            self.path = path
            self.size = size
            self.lfsSHA256 = lfsSHA256
            self.blobID = blobID
        }

        /// The name huggingface_hub's cache keeps its content under: the LFS SHA-256, else the
        /// git blob id.
        public var etag: String? { lfsSHA256 ?? blobID }
    }

    /// A revision: its commit and its files.
    public struct Revision: Sendable, Equatable {
        /// The commit the revision is at (40 hex digits).
        public var commit: String
        /// Every file of the repository at that commit, as listed (`select` skips a path no
        /// file beneath a directory can have).
        public var files: [File]
        /// The repository is gated (`"gated": "auto"` or `"manual"`): its files need a token
        /// whose user accepted its terms, though the revision's answer needs none.
        public var gated = false
    }

    /// The API path that answers `name`'s revision with its files.
    public static func revisionPath(_ name: HubName) -> String {
        "/api/\(name.kind.plural)/\(name.repository)/revision/\(SigV4.uriEncode(name.revisionOrMain))?blobs=true"
    }

    /// The path of `file` at `commit`: `/ORG/REPO/resolve/COMMIT/PATH` (datasets and spaces
    /// under `/datasets/` and `/spaces/`), each segment percent-encoded.
    public static func resolvePath(_ name: HubName, commit: String, file: String) -> String {
        let prefix = name.kind == .model ? "" : "/\(name.kind.plural)"
        let path = file.split(separator: "/").map { SigV4.uriEncode(String($0)) }.joined(separator: "/")
        return "\(prefix)/\(name.repository)/resolve/\(commit)/\(path)"
    }

    /// Reads the revision API's answer.
    ///
    /// - Throws: `.badRequest` when it is not JSON, has no 40-hex commit (`sha`), or a file has no
    ///   path or a malformed digest.
    public static func revision(_ bytes: [UInt8]) throws(HaulError) -> Revision {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw HaulError(.badRequest, "the Hub's answer is not JSON: \(error.reason)")
        }
        guard let object = value.object, let commit = object["sha"]?.string, commit.utf8.count == 40,
            commit.allSatisfy(\.isHexDigit)
        else { throw HaulError(.badRequest, "the Hub's answer names no commit") }
        var files: [File] = []
        for sibling in object["siblings"]?.array ?? [] {
            guard let entry = sibling.object, let path = entry["rfilename"]?.string else {
                throw HaulError(.badRequest, "the Hub's answer lists a file without a path")
            }
            let lfs = entry["lfs"]?.object
            let sha256 = lfs?["sha256"]?.string
            if let sha256, !Checksum.Algorithm.sha256.isDigest(hex: sha256) {
                throw HaulError(.badRequest, "the Hub's answer gives \(path) a malformed sha256")
            }
            let blob = entry["blobId"]?.string.flatMap { $0.utf8.count == 40 && $0.allSatisfy(\.isHexDigit) ? $0 : nil }
            files.append(
                File(
                    path: path, size: lfs?["size"]?.integer ?? entry["size"]?.integer, lfsSHA256: sha256?.lowercased(),
                    blobID: blob?.lowercased()))
        }
        // `false` when not gated, else how access is granted ("auto", "manual").
        let gated: Bool
        switch object["gated"] {
        case .string(let how): gated = !how.isEmpty
        case .bool(let value): gated = value
        default: gated = false
        }
        return Revision(commit: commit.lowercased(), files: files, gated: gated)
    }

    /// The files `path` (a file, a folder, or nil for all) and the globs select, each kept with
    /// its path relative to the folder (a file asked by name keeps its name), and those of them
    /// skipped because their path names no file beneath a directory (`GivenPaths`: an empty,
    /// `.` or `..` segment, a control character, a segment too long); dot files and dot folders
    /// are kept. `include` empty takes every file; `exclude` drops any file one of its patterns
    /// matches. Patterns match the file's path in the repository as `fnmatch` does (as
    /// `huggingface-cli download` takes them: `*` crosses `/`; a pattern ending in `/` takes
    /// the folder's files).
    public static func select(
        _ files: [File], under path: String?, include: [String], exclude: [String]
    ) -> (files: [(file: File, local: String)], skipped: [SkippedPath]) {
        func matches(_ patterns: [String], _ path: String) -> Bool {
            patterns.contains { Glob.matches($0.hasSuffix("/") ? $0 + "*" : $0, path) }
        }
        var selected: [(File, String)] = []
        var skipped: [SkippedPath] = []
        for file in files {
            var local = file.path
            if let path {
                if file.path == path {
                    local = String(file.path.split(separator: "/").last ?? "")
                } else if file.path.hasPrefix(path + "/") {
                    local = String(file.path.dropFirst(path.count + 1))
                } else {
                    continue
                }
            }
            guard include.isEmpty || matches(include, file.path), !matches(exclude, file.path) else { continue }
            if let problem = GivenPaths.listedProblem(file.path) {
                skipped.append(SkippedPath(kind: "file", path: file.path, problem: problem))
                continue
            }
            selected.append((file, local))
        }
        return (selected, skipped)
    }
}

/// Shell-style patterns as Python's `fnmatch` reads them: `*` any run of characters (`/`
/// included), `?` one, `[abc]`, `[a-z]` and `[!abc]` one of (or none of) a set.
public enum Glob {
    /// Whether `pattern` matches the whole of `text`.
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars)
        let t = Array(text.unicodeScalars)
        var pi = 0
        var ti = 0
        var star: Int?
        var resume = 0
        while ti < t.count {
            if pi < p.count, p[pi] == "*" {
                star = pi
                resume = ti
                pi += 1
                continue
            }
            if pi < p.count, let next = step(p, pi, t[ti]) {
                pi = next
                ti += 1
                continue
            }
            guard let star else { return false }
            pi = star + 1
            resume += 1
            ti = resume
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// Where the pattern goes on when its element at `index` takes `character`; nil when it
    /// does not.
    static func step(_ p: [Unicode.Scalar], _ index: Int, _ character: Unicode.Scalar) -> Int? {
        switch p[index] {
        case "?": return index + 1
        case "[":
            var cursor = index + 1
            var negated = false
            if cursor < p.count, p[cursor] == "!" {
                negated = true
                cursor += 1
            }
            var found = false
            var first = true
            while cursor < p.count, p[cursor] != "]" || first {
                first = false
                if cursor + 2 < p.count, p[cursor + 1] == "-", p[cursor + 2] != "]" {
                    if p[cursor] <= character && character <= p[cursor + 2] { found = true }
                    cursor += 3
                } else {
                    if p[cursor] == character { found = true }
                    cursor += 1
                }
            }
            // No closing bracket: `[` is itself.
            guard cursor < p.count else { return character == "[" ? index + 1 : nil }
            return found != negated ? cursor + 1 : nil
        default:
            return p[index] == character ? index + 1 : nil
        }
    }
}

/// The cache huggingface_hub keeps and reads (`HF_HUB_CACHE`): `models--ORG--REPO/` (or
/// `datasets--`, `spaces--`) with `blobs/ETAG` (the content), `snapshots/COMMIT/PATH` (a relative
/// link to the blob) and `refs/REVISION` (the commit the revision is at).
public enum HubCache {
    /// `models--ORG--REPO`.
    public static func folder(_ name: HubName) -> String {
        "\(name.kind.plural)--" + name.repository.replacingSlashes()
    }

    /// Where a file's content goes: `FOLDER/blobs/ETAG`.
    public static func blob(_ name: HubName, etag: String) -> String {
        folder(name) + "/blobs/" + etag
    }

    /// The link of `path` at `commit` and what it points to, relative to the link's own folder
    /// (`../../blobs/ETAG`, one more `../` per folder in `path`).
    public static func snapshot(_ name: HubName, commit: String, path: String, etag: String) -> (
        link: String, target: String
    ) {
        let depth = path.split(separator: "/").count - 1
        let up = String(repeating: "../", count: depth + 2)
        return (folder(name) + "/snapshots/\(commit)/\(path)", up + "blobs/" + etag)
    }

    /// The file that says which commit `revision` is at: `FOLDER/refs/REVISION`.
    public static func ref(_ name: HubName, revision: String) -> String {
        folder(name) + "/refs/" + revision
    }
}

extension String {
    /// `ORG/REPO` as the cache spells it: `ORG--REPO`.
    fileprivate func replacingSlashes() -> String {
        split(separator: "/", omittingEmptySubsequences: false).joined(separator: "--")
    }
}
