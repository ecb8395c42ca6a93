/// What a user asks for: which URL, where it goes, and the options that shape the transfer.
/// Two requests with the same `identity` are the same download, so running a command again
/// resumes it instead of starting a second copy.
public struct DownloadRequest: Hashable, Codable, Sendable {
    /// Where the file goes: a directory it gets a name in, or an exact path.
    public enum Destination: Hashable, Codable, Sendable {
        /// Into this directory, named by the server or the URL.
        case directory(String)
        /// Exactly this path.
        case file(String)
    }

    /// The URL to download: the first of `sources`, and the one `identity` is made of.
    public var url: RemoteURL
    /// More URLs of the same file (`--mirrors`, aria2's several URIs, a Metalink): the download
    /// takes bytes from all of them, each checked against the others (`SourceSet`). `url` is
    /// the first source; none of these is part of `identity`.
    public var mirrors: [RemoteURL]
    /// Absolute directory the file (and its `.part`) lives in.
    public var directory: String
    /// The name the user chose (`-o`), else nil: the name then comes from the response.
    public var fileName: String?
    /// Only these bytes of the remote file (`--range`).
    public var range: ByteRange?
    /// The digest the finished file must have (`--checksum`), checked before it gets its final name;
    /// nil when the user gave none (a digest the server announces is then checked instead).
    public var checksum: Checksum?
    /// Digests of the file's pieces (a Metalink's): a piece that fails is fetched again.
    public var pieceHashes: PieceHashes?
    /// The digest of the digests of the file's parts (an S3 multipart object's checksum),
    /// checked with the whole file before it is published.
    public var compositeChecksum: CompositeChecksum?
    /// Each request is signed with AWS Signature Version 4 in this scope as it is sent (an
    /// `s3://` object); nil: requests go as they are.
    public var signing: SigV4Scope?
    /// Extra request headers (`-H`).
    public var headers: HTTPHeaderList
    /// Tries per stretch without progress; nil takes the manager's default.
    public var maxAttempts: Int?
    /// Higher runs first.
    public var priority: Int
    /// Connections this download may use at once (`-x`); 1 unless the user asks for more.
    public var connections: Int
    /// No count was named (`haul get` without `-x`): the download starts at `connections` and
    /// takes more while each step raises its speed (`ConnectionGrowth`).
    public var growsConnections = false
    /// Bytes per second this download may use, over all its connections; nil for no limit.
    public var maxBytesPerSecond: Int64?
    /// Sent as `Authorization: Basic` to the URL's origin only (from the URL's userinfo,
    /// `--user` or netrc). No part of `identity`, equality, hashing or the `Codable` form, so
    /// nothing stores or prints it by accident.
    public var credentials: Credentials?
    /// Sent as the `Authorization` field to `url`'s origin only (a registry's `Bearer` token),
    /// unless the request's headers name one. Like `credentials`, no part of `identity`,
    /// equality, hashing or the `Codable` form: never stored, so a token is never on disk; the
    /// command that resumes gives it again.
    public var authorization: String?
    /// `-N` (as wget): when the final file exists, ask with `If-Modified-Since` (its time) and
    /// keep it on a 304; a newer file replaces it once complete and verified. Implies
    /// `remoteTime`.
    public var timestamping: Bool = false
    /// `--remote-time` (curl's `-R`): the published file's modification time is the server's
    /// `Last-Modified`.
    public var remoteTime: Bool = false
    /// The `Cookie` field given for each URL (aria2's `load-cookies` over RPC), sent to that URL
    /// only (`headers(for:)`). Empty unless the daemon was given a cookie file with the add.
    public var cookies = SourceCookies()
    /// `--sequential` (aria2's `stream-piece-selector=inorder`): the first and last pieces
    /// first, then every connection in a window just ahead of the first missing byte
    /// (`SequentialPlanner`), so the file can be read while it downloads.
    public var sequential = false

    /// A request for `url` into `destination`. `timestamping`, `remoteTime`, `pieceHashes`,
    /// `compositeChecksum`, `signing`, `cookies`, `growsConnections` and `sequential` start off and are set
    /// afterwards.
    ///
    /// - Throws: `.usage` when `connections` is outside `Limits.connections`, `maxBytesPerSecond` is
    ///   not positive, a `.file` destination names no file (ends in `/`, `.` or `..`), a name
    ///   that is too long (over `FileNameSanitizer.maxBytes`) or holds a NUL
    ///   (`GivenPaths.outputNameProblem`), or when there are more than `maxSources` URLs.
    public init(
        url: RemoteURL,
        destination: Destination,
        range: ByteRange? = nil,
        checksum: Checksum? = nil,
        headers: HTTPHeaderList = [:],
        maxAttempts: Int? = nil,
        priority: Int = 0,
        connections: Int = 1,
        maxBytesPerSecond: Int64? = nil,
        credentials: Credentials? = nil,
        mirrors: [RemoteURL] = []
    ) throws(HaulError) {
        try Limits.check(connections, in: Limits.connections, field: "connections", code: .usage)
        if let maxBytesPerSecond, maxBytesPerSecond <= 0 {
            throw HaulError(.usage, "a download's rate limit must be positive (got \(maxBytesPerSecond))")
        }
        self.url = url
        self.mirrors = try Self.checkedMirrors(mirrors, besides: url)
        switch destination {
        case .directory(let path):
            self.directory = path
            self.fileName = nil
        case .file(let path):
            let (directory, name) = Paths.split(path)
            guard let name else { throw HaulError(.usage, "output path '\(path)' names a directory, not a file") }
            // The user's own name, or a listed path's last segment: kept as given (a dot file
            // too); the rules for a name a server suggests are `FileNameSanitizer`'s.
            if let problem = GivenPaths.outputNameProblem(name) { throw HaulError(.usage, problem) }
            self.directory = directory
            self.fileName = name
        }
        self.range = range
        self.checksum = checksum
        self.headers = headers
        self.maxAttempts = maxAttempts
        self.priority = priority
        self.connections = connections
        self.maxBytesPerSecond = maxBytesPerSecond
        self.credentials = credentials
    }

    private enum CodingKeys: String, CodingKey {
        case url, mirrors, directory, fileName, range, checksum, headers, maxAttempts, priority, connections,
            maxBytesPerSecond
        case timestamping, remoteTime, pieceHashes, cookies, growsConnections, compositeChecksum, signing
        case sequential
    }

    /// Gives the download new URLs (a new URL that keeps the bytes, a refreshed signed URL).
    /// Credentials belong to an origin: they stay only when the new first URL has the old one's
    /// origin; otherwise only the new URL's own userinfo is sent (a token holder's `changeUri`
    /// to a host of their own must not collect the password).
    /// Returns whether the credentials were kept.
    @discardableResult
    public mutating func replaceSources(url newURL: RemoteURL, mirrors newMirrors: [RemoteURL]) throws(HaulError)
        -> Bool
    {
        let mirrors = try Self.checkedMirrors(newMirrors, besides: newURL)
        let kept = newURL.hasSameOrigin(as: url)
        if !kept { credentials = newURL.credentials }
        url = newURL
        self.mirrors = mirrors
        return kept
    }

    /// Every URL the file may come from: `url` first, then the mirrors.
    public var sources: [RemoteURL] { [url] + mirrors }

    /// The most URLs one download takes (aria2 uses at most `split` of them at once).
    public static let maxSources = 64

    /// A download's URLs as given (`urls[0]` its URL, the rest its mirrors), checked: at least
    /// one, the mirrors as `checkedMirrors` leaves them.
    public static func checkedSources(_ urls: [RemoteURL]) throws(HaulError) -> (url: RemoteURL, mirrors: [RemoteURL]) {
        guard let first = urls.first else { throw HaulError(.usage, "a download needs at least one URL") }
        return (first, try checkedMirrors(Array(urls.dropFirst()), besides: first))
    }

    /// `mirrors` without `url` and without repeats, at most `maxSources - 1`.
    public static func checkedMirrors(_ mirrors: [RemoteURL], besides url: RemoteURL) throws(HaulError) -> [RemoteURL] {
        var seen: Set<RemoteURL> = [url]
        let unique = mirrors.filter { seen.insert($0).inserted }
        guard unique.count < maxSources else {
            throw HaulError(.usage, "a download takes at most \(maxSources) URLs (got \(unique.count + 1))")
        }
        return unique
    }

    /// Compares every field but `credentials`, which can never tell two requests apart.
    public static func == (lhs: DownloadRequest, rhs: DownloadRequest) -> Bool {
        lhs.url == rhs.url && lhs.mirrors == rhs.mirrors && lhs.directory == rhs.directory
            && lhs.fileName == rhs.fileName && lhs.range == rhs.range
            && lhs.checksum == rhs.checksum && lhs.headers == rhs.headers && lhs.maxAttempts == rhs.maxAttempts
            && lhs.priority == rhs.priority && lhs.connections == rhs.connections
            && lhs.maxBytesPerSecond == rhs.maxBytesPerSecond
            && lhs.timestamping == rhs.timestamping && lhs.remoteTime == rhs.remoteTime
            && lhs.pieceHashes == rhs.pieceHashes
            && lhs.cookies == rhs.cookies && lhs.growsConnections == rhs.growsConnections
            && lhs.compositeChecksum == rhs.compositeChecksum && lhs.signing == rhs.signing
            && lhs.sequential == rhs.sequential
    }

    /// Hashes the fields `==` compares: everything but `credentials`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(mirrors)
        hasher.combine(directory)
        hasher.combine(fileName)
        hasher.combine(range)
        hasher.combine(checksum)
        hasher.combine(headers)
        hasher.combine(maxAttempts)
        hasher.combine(priority)
        hasher.combine(connections)
        hasher.combine(maxBytesPerSecond)
        hasher.combine(timestamping)
        hasher.combine(remoteTime)
        hasher.combine(pieceHashes)
        hasher.combine(cookies)
        hasher.combine(growsConnections)
        hasher.combine(compositeChecksum)
        hasher.combine(signing)
        hasher.combine(sequential)
    }

    /// More connections than this to one server is abuse, not speed.
    public static let maxConnections = 64

    /// The fields that make two requests the same download.
    public var identity: String {
        [url.absoluteString, directory, fileName ?? "", range?.description ?? ""].joined(separator: "\u{1F}")
    }
}

/// Plain string paths, the way the store and the engine both build them.
public enum Paths {
    /// Splits "dir/name" into ("dir", "name"); a bare name goes in ".". A trailing slash means no name.
    public static func split(_ path: String) -> (directory: String, name: String?) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path.isEmpty ? nil : path) }
        let name = String(path[path.index(after: slash)...])
        var directory = String(path[..<slash])
        if directory.isEmpty { directory = "/" }
        return (directory, name.isEmpty ? nil : name)
    }

    /// `name` inside `directory`, joined with one `/` (none added when `directory` ends in one).
    public static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// An absolute `path` with `.`, `..` and repeated or trailing slashes resolved from its text
    /// alone, as Foundation's `standardizingPath` does; symbolic links are not followed.
    public static func normalized(_ path: String) -> String {
        // Most paths are normalised already (every add's directory, twice): one pass over the
        // bytes says so, without splitting and joining (6 % of the daemon's CPU per batched add).
        if isNormalized(path) { return path }
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
            } else {
                parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Whether `path` is absolute with no `.` or `..` component and no repeated or trailing
    /// slash (`/` itself is): `normalized` would return it unchanged.
    static func isNormalized(_ path: String) -> Bool {
        var bytes = path.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "/") else { return false }
        // Bytes since the last slash, and whether they were all dots (at most two matter).
        var length = 0
        var dots = 0
        while let byte = bytes.next() {
            if byte == UInt8(ascii: "/") {
                if length == 0 || (length == dots && dots <= 2) { return false }
                (length, dots) = (0, 0)
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        // A trailing slash, or a last component of `.` or `..`, is not normalised; `/` is.
        if length == 0 { return path.utf8.count == 1 }
        return !(length == dots && dots <= 2)
    }

    /// Whether the normalised `path` is `root` or beneath it (`/dlx` is not beneath `/dl`).
    public static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root + "/")
    }
}

extension DownloadRequest {
    /// Decoded field by field: `mirrors` is absent from what was stored before it existed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(RemoteURL.self, forKey: .url)
        mirrors = try container.decodeIfPresent([RemoteURL].self, forKey: .mirrors) ?? []
        directory = try container.decode(String.self, forKey: .directory)
        fileName = try container.decodeIfPresent(String.self, forKey: .fileName)
        range = try container.decodeIfPresent(ByteRange.self, forKey: .range)
        checksum = try container.decodeIfPresent(Checksum.self, forKey: .checksum)
        headers = try container.decode(HTTPHeaderList.self, forKey: .headers)
        maxAttempts = try container.decodeIfPresent(Int.self, forKey: .maxAttempts)
        priority = try container.decode(Int.self, forKey: .priority)
        connections = try container.decode(Int.self, forKey: .connections)
        maxBytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond)
        timestamping = try container.decodeIfPresent(Bool.self, forKey: .timestamping) ?? false
        remoteTime = try container.decodeIfPresent(Bool.self, forKey: .remoteTime) ?? false
        pieceHashes = try container.decodeIfPresent(PieceHashes.self, forKey: .pieceHashes)
        cookies = try container.decodeIfPresent(SourceCookies.self, forKey: .cookies) ?? SourceCookies()
        growsConnections = try container.decodeIfPresent(Bool.self, forKey: .growsConnections) ?? false
        compositeChecksum = try container.decodeIfPresent(CompositeChecksum.self, forKey: .compositeChecksum)
        signing = try container.decodeIfPresent(SigV4Scope.self, forKey: .signing)
        sequential = try container.decodeIfPresent(Bool.self, forKey: .sequential) ?? false
        credentials = nil
        authorization = nil
    }
}
