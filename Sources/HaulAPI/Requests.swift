import HaulCore

/// What clients send: adds, selections, moves, option changes; and the small answers.

/// One download to add. Only `url` is required.
public struct AddRequest: Codable, Sendable {
    public var url: String
    public var directory: String?
    public var fileName: String?
    public var priority: Int?
    public var checksum: String?
    public var headers: [String: String]?
    /// Connections for this file (1...64); nil takes the daemon's default (`haul serve -x`).
    public var connections: Int?
    /// This download's rate limit in bytes per second; nil for none.
    public var maxBytesPerSecond: Int64?
    /// More URLs of the same file (mirrors): the download takes bytes from all of them.
    public var mirrors: [String]?
    /// Saved paused: no request is sent until it is resumed (aria2's `pause` option).
    public var paused: Bool?
    /// Its index in the waiting list, 0 the head (aria2's `addUri` position); nil: the end of
    /// its priority.
    public var position: Int?
    /// Sent as `Referer` on every request and redirect hop, over one in `headers`; `*` is the
    /// download's own URL (aria2's `referer`).
    public var referer: String?
    /// Sent as `User-Agent`, over one in `headers` (aria2's `user-agent`).
    public var userAgent: String?
    /// Read in order, the first and last pieces first (`haul get --sequential`; aria2's
    /// `stream-piece-selector=inorder`); nil takes the daemon's default (`haul serve --sequential`).
    public var sequential: Bool?

    public init(
        url: String, directory: String? = nil, fileName: String? = nil, priority: Int? = nil,
        checksum: String? = nil, headers: [String: String]? = nil, connections: Int? = nil,
        maxBytesPerSecond: Int64? = nil, mirrors: [String]? = nil
    ) {
        self.url = url
        self.mirrors = mirrors
        self.directory = directory
        self.fileName = fileName
        self.priority = priority
        self.checksum = checksum
        self.headers = headers
        self.connections = connections
        self.maxBytesPerSecond = maxBytesPerSecond
    }

    /// The engine's request, every field checked; errors name the field.
    public func downloadRequest(defaultDirectory: String, defaultConnections: Int = 1) throws(HaulError)
        -> DownloadRequest
    {
        try Limits.check(connections: connections)
        try Limits.check(maxBytesPerSecond: maxBytesPerSecond)
        guard (directory ?? defaultDirectory).hasPrefix("/") else {
            throw HaulError(.usage, "directory must be an absolute path: \(directory ?? defaultDirectory)")
        }
        // One spelling per place, or `/d/` and `/d` would be two downloads of the same file.
        let directory = Self.normalized(directory ?? defaultDirectory)
        for (name, value) in headers ?? [:] {
            // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
            guard !name.isEmpty, !(name + value).utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }),
                !name.contains(where: { $0 == ":" || $0 == " " })
            else {
                throw HaulError(.usage, "header '\(name.prefix(40))' is not a valid HTTP header")
            }
        }
        // The client's own name, kept as given (`.env` too, as aria2's `out`); a listed path's
        // last segment passes the same rule (`GivenPaths`).
        if let fileName,
            let problem = fileName.contains("/")
                ? "a plain file name, without '/'" : GivenPaths.segmentProblem(Substring(fileName))
        {
            throw HaulError(.usage, "fileName '\(fileName)' is not allowed: \(problem)")
        }
        let destination: DownloadRequest.Destination =
            fileName.map { .file(Paths.join(directory, $0)) } ?? .directory(directory)
        var mirrorURLs: [RemoteURL] = []
        for (index, text) in (mirrors ?? []).enumerated() {
            do {
                mirrorURLs.append(try RemoteURL(text))
            } catch {
                throw HaulError(error.code, "mirrors[\(index)]: \(error.message)")
            }
        }
        var request = try DownloadRequest(
            url: RemoteURL(url), destination: destination,
            checksum: try checksum.map { text throws(HaulError) in try Checksum(parsing: text) },
            headers: RequestHeaderOptions.applying(
                referer: referer, userAgent: userAgent,
                to: HTTPHeaderList(
                    (headers ?? [:]).sorted { $0.key < $1.key }.map { .init(name: $0.key, value: $0.value) })),
            priority: priority ?? 0,
            connections: connections ?? defaultConnections,
            maxBytesPerSecond: maxBytesPerSecond, mirrors: mirrorURLs)
        // No count named: the download starts at the daemon's `-x` and finds its count from there.
        request.growsConnections = connections == nil
        request.sequential = sequential ?? false
        return request
    }
}

extension AddRequest {
    /// Absolute, without `.`, `..`, repeated or trailing slashes.
    public static func normalized(_ path: String) -> String {
        // Most paths are normal already (absolute, no empty, `.` or `..` part, no trailing
        // slash): checked in one pass over the bytes, without splitting.
        if isNormal(path) { return path }
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    private static func isNormal(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        if bytes.last == UInt8(ascii: "/") { return false }
        var partStart = 1
        for index in 1...bytes.count {
            guard index == bytes.count || bytes[index] == UInt8(ascii: "/") else { continue }
            let part = bytes[partStart..<index]
            if part.isEmpty || part.elementsEqual([UInt8(ascii: ".")])
                || part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
            {
                return false
            }
            partStart = index + 1
        }
        return true
    }
}

/// `{"ids": [...]}` or `{"all": true}`.
public struct Selection: Codable, Sendable {
    public var ids: [String]?
    public var all: Bool?

    public init(ids: [String]? = nil, all: Bool? = nil) {
        self.ids = ids
        self.all = all
    }
}

public struct CountView: Codable, Sendable {
    public var count: Int

    public init(count: Int) {
        self.count = count
    }
}

/// `PUT /downloads/{id}/urls`: the download's URLs from now on, the first its URL, the rest
/// its mirrors.
public struct URLsChange: Codable, Sendable {
    public var urls: [String]

    public init(urls: [String]) {
        self.urls = urls
    }

    /// Every URL parsed; errors name the one that is not.
    public func remoteURLs() throws(HaulError) -> [RemoteURL] {
        guard !urls.isEmpty else {
            throw HaulError(.badRequest, "expected {\"urls\": [URL, ...]} with at least one URL")
        }
        var parsed: [RemoteURL] = []
        for (index, text) in urls.enumerated() {
            do {
                parsed.append(try RemoteURL(text))
            } catch {
                throw HaulError(.badRequest, "urls[\(index)]: \(error.message)")
            }
        }
        return parsed
    }
}

public struct MoveRequest: Codable, Sendable {
    public var to: QueueMove

    public init(to: QueueMove) {
        self.to = to
    }
}

public struct OptionsView: Codable, Sendable {
    public var maxConcurrentDownloads: Int
    public var directory: String
    /// Connections for new downloads that do not name theirs.
    public var connections: Int
    /// The limit for everything the daemon downloads, in bytes per second; nil for none.
    public var maxBytesPerSecond: Int64?
    /// `haul serve --limit-schedule` as given, which sets `maxBytesPerSecond` at each of its
    /// boundaries; nil without one. Not changeable here.
    public var limitSchedule: String?
    /// New downloads that do not say are read in order (`haul serve --sequential`).
    public var sequential: Bool

    public init(
        maxConcurrentDownloads: Int, directory: String, connections: Int, maxBytesPerSecond: Int64?,
        limitSchedule: String? = nil, sequential: Bool = false
    ) {
        self.maxConcurrentDownloads = maxConcurrentDownloads
        self.directory = directory
        self.connections = connections
        self.maxBytesPerSecond = maxBytesPerSecond
        self.limitSchedule = limitSchedule
        self.sequential = sequential
    }

    private enum CodingKeys: String, CodingKey {
        case maxConcurrentDownloads, directory, connections, maxBytesPerSecond, limitSchedule, sequential
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxConcurrentDownloads = try container.decode(Int.self, forKey: .maxConcurrentDownloads)
        directory = try container.decode(String.self, forKey: .directory)
        connections = try container.decode(Int.self, forKey: .connections)
        maxBytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond)
        limitSchedule = try container.decodeIfPresent(String.self, forKey: .limitSchedule)
        // Absent from a daemon older than the field.
        sequential = try container.decodeIfPresent(Bool.self, forKey: .sequential) ?? false
    }

    /// Every key, `maxBytesPerSecond: null` and `limitSchedule: null` included.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maxConcurrentDownloads, forKey: .maxConcurrentDownloads)
        try container.encode(directory, forKey: .directory)
        try container.encode(connections, forKey: .connections)
        try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond)
        try container.encode(limitSchedule, forKey: .limitSchedule)
        try container.encode(sequential, forKey: .sequential)
    }
}

/// A `PUT`/`PATCH` of the options: absent fields stay as they are; `"maxBytesPerSecond": null`
/// removes the global limit.
public struct OptionsChange: Codable, Sendable {
    public var maxConcurrentDownloads: Int?
    public var connections: Int?
    /// nil: unchanged; `.some(nil)`: no limit.
    public var maxBytesPerSecond: Int64??
    /// nil: unchanged; whether new downloads that do not say are read in order.
    public var sequential: Bool?

    public init(
        maxConcurrentDownloads: Int? = nil, connections: Int? = nil, maxBytesPerSecond: Int64?? = nil,
        sequential: Bool? = nil
    ) {
        self.maxConcurrentDownloads = maxConcurrentDownloads
        self.connections = connections
        self.maxBytesPerSecond = maxBytesPerSecond
        self.sequential = sequential
    }

    private enum CodingKeys: String, CodingKey {
        case maxConcurrentDownloads, connections, maxBytesPerSecond, sequential
    }

    /// Options of `haul serve`'s command line that no request may set: they run code on the host
    /// or send its events elsewhere (`--on-complete`, `--on-error`, `--webhook`), or they are the
    /// schedule. Named in a change, they are refused rather than ignored, so a client learns it.
    public static let commandLineOnly: Set<String> = [
        "onComplete", "onError", "webhook", "webhookSecret", "webhookSecretFile", "limitSchedule",
    ]

    public init(from decoder: any Decoder) throws {
        if let name = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
            .filter(Self.commandLineOnly.contains).sorted().first
        {
            throw HaulError(.badRequest, "'\(name)' is set only on haul serve's command line, never through the API")
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxConcurrentDownloads = try container.decodeIfPresent(Int.self, forKey: .maxConcurrentDownloads)
        connections = try container.decodeIfPresent(Int.self, forKey: .connections)
        maxBytesPerSecond = try container.decodeLimit(forKey: .maxBytesPerSecond)
        sequential = try container.decodeIfPresent(Bool.self, forKey: .sequential)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(maxConcurrentDownloads, forKey: .maxConcurrentDownloads)
        try container.encodeIfPresent(connections, forKey: .connections)
        if let maxBytesPerSecond { try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond) }
        try container.encodeIfPresent(sequential, forKey: .sequential)
    }
}

/// A `PATCH` (or `PUT`) of one download: `{"maxBytesPerSecond": N}`, or `null` for no limit of its own.
public struct DownloadChange: Codable, Sendable {
    /// nil: unchanged; `.some(nil)`: no limit.
    public var maxBytesPerSecond: Int64??

    public init(maxBytesPerSecond: Int64??) {
        self.maxBytesPerSecond = maxBytesPerSecond
    }

    private enum CodingKeys: String, CodingKey {
        case maxBytesPerSecond
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxBytesPerSecond = try container.decodeLimit(forKey: .maxBytesPerSecond)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let maxBytesPerSecond { try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond) }
    }
}

/// Any key of a JSON object, to look at the names a body gives.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer {
    /// Absent: nil (leave it); `null`: `.some(nil)` (no limit); a number: that limit.
    func decodeLimit(forKey key: Key) throws -> Int64?? {
        guard contains(key) else { return nil }
        if try decodeNil(forKey: key) { return .some(nil) }
        return .some(try decode(Int64.self, forKey: key))
    }
}

public struct SummaryView: Codable, Sendable {
    public var downloadSpeed: Double
    public var counts: [String: Int]
    public var maxConcurrentDownloads: Int

    public init(_ summary: QueueSummary) {
        downloadSpeed = summary.downloadSpeed
        counts = Dictionary(
            uniqueKeysWithValues: DownloadStatus.allCases.map { ($0.rawValue, summary.counts[$0] ?? 0) })
        maxConcurrentDownloads = summary.maxConcurrentDownloads
    }
}

extension DownloadID {
    /// An id from a URL or a body: unknown shapes are simply not found.
    public init(parsing text: String) throws(HaulError) {
        guard !text.isEmpty, text.count <= 64, text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw HaulError(.notFound, "no download with id '\(text.prefix(64))'")
        }
        self.init(rawValue: text)
    }
}
