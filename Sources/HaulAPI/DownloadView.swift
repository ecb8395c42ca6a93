import HaulCore

/// One download as the daemon shows it (docs/API.md): `GET /api/v1/downloads`, `haul ls --json`,
/// and what the CLI decodes, so the two cannot drift apart. Every key is always written, `null`
/// included (scripts rely on `.error` and `.totalLength` being there): by `encode(to:)` and by
/// the hand-written `write(to:)` alike, which a test holds to the same bytes.
public struct DownloadView: Codable, Sendable, Hashable {
    public var id: String
    public var url: String
    public var status: DownloadStatus
    public var completedLength: Int64
    public var totalLength: Int64?
    public var path: String?
    public var directory: String
    public var fileName: String?
    public var priority: Int
    /// Bytes per second; 0 unless running.
    public var speed: Double
    public var error: ErrorView?
    public var createdAt: Int64
    /// Connections transferring right now; 0 unless running.
    public var connections: Int
    /// The connections the download may use (its `connections` setting, 1...64).
    public var maxConnections: Int
    /// The download's own rate limit in bytes per second; nil for none (the global limit still applies).
    public var maxBytesPerSecond: Int64?
    /// In a fleet, the host running it (`haul serve --store postgres://...`); nil otherwise.
    public var host: String?
    /// Its URL expired midway (`url-expired`): it waits, its bytes kept, for a new URL
    /// (`PUT /api/v1/downloads/ID/urls`, aria2's `changeUri`, `haul urls ID URL`).
    public var needsNewURL: Bool
    /// Read in order (`--sequential`; aria2's `stream-piece-selector=inorder`).
    public var sequential: Bool

    public init(_ record: DownloadRecord, live: Progress?, host: String? = nil) {
        id = record.id.rawValue
        url = record.request.url.absoluteString
        status = record.status
        let running = record.status == .running
        completedLength = running ? max(live?.completed ?? 0, record.completedLength) : record.completedLength
        totalLength = record.expectedLength ?? (running ? live?.total : nil)
        fileName = record.fileName
        directory = record.request.directory
        path = record.finalPath
        priority = record.request.priority
        speed = running ? live?.bytesPerSecond ?? 0 : 0
        error = record.error.map(ErrorView.init)
        createdAt = record.createdAt
        connections = running ? live?.connections ?? 0 : 0
        maxConnections = record.request.connections
        maxBytesPerSecond = record.request.maxBytesPerSecond
        self.host = running ? host : nil
        needsNewURL = record.needsNewURL
        sequential = record.request.sequential
    }

    private enum CodingKeys: String, CodingKey {
        case completedLength, connections, createdAt, directory, error, fileName, host, id, maxBytesPerSecond
        case maxConnections, needsNewURL, path, priority, sequential, speed, status, totalLength, url
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(completedLength, forKey: .completedLength)
        try container.encode(connections, forKey: .connections)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(directory, forKey: .directory)
        try container.encode(error, forKey: .error)
        try container.encode(fileName, forKey: .fileName)
        try container.encode(host, forKey: .host)
        try container.encode(id, forKey: .id)
        try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond)
        try container.encode(maxConnections, forKey: .maxConnections)
        try container.encode(needsNewURL, forKey: .needsNewURL)
        try container.encode(path, forKey: .path)
        try container.encode(priority, forKey: .priority)
        try container.encode(sequential, forKey: .sequential)
        try container.encode(speed, forKey: .speed)
        try container.encode(status, forKey: .status)
        try container.encode(totalLength, forKey: .totalLength)
        try container.encode(url, forKey: .url)
    }

    /// The same object as `encode(to:)`, keys sorted, straight into bytes: listing ten thousand
    /// downloads through `JSONEncoder` took most of the request's time.
    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("completedLength", completedLength)
            json.field("connections", Int64(connections))
            json.field("createdAt", createdAt)
            json.field("directory", directory)
            json.field(
                "error",
                object: error.map { error in
                    { json in
                        json.field("code", error.code)
                        json.field("message", error.message)
                    }
                })
            json.field("fileName", fileName)
            json.field("host", host)
            json.field("id", id)
            json.field("maxBytesPerSecond", maxBytesPerSecond)
            json.field("maxConnections", Int64(maxConnections))
            json.field("needsNewURL", needsNewURL)
            json.field("path", path)
            json.field("priority", Int64(priority))
            json.field("sequential", sequential)
            json.field("speed", speed)
            json.field("status", status.rawValue)
            json.field("totalLength", totalLength)
            json.field("url", url)
        }
    }
}

/// A failure as the API shows it: the stable code of a `HaulError` or a `DaemonError`, and its
/// one-line message. The code
/// stays a string: new codes are added over time, and an old client must still decode them.
public struct ErrorView: Codable, Sendable, Hashable {
    public var code: String
    public var message: String

    public init(_ error: HaulError) {
        code = error.code.rawValue
        message = error.description
    }

    public init(_ error: DaemonError) {
        code = error.code.rawValue
        message = error.description
    }

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// Back to the error it describes (the CLI's exit codes come from it): the daemon's own, or
    /// the engine's (a code this haul does not know reads as `internal`, its message kept).
    public func error(httpStatus: Int? = nil) -> any Error & Sendable {
        if let code = DaemonError.Code(rawValue: code) { return DaemonError(code, message, httpStatus: httpStatus) }
        return HaulError(HaulError.Code(reading: code), message, httpStatus: httpStatus)
    }
}

/// `{"error": {...}}`: the body of every error answer.
public struct ErrorBody: Codable, Sendable {
    public var error: ErrorView

    public init(error: ErrorView) {
        self.error = error
    }
}
