import Haul
import HaulCore

/// The JSON shapes of the API (docs/API.md). The CLI decodes the same types, so the two cannot
/// drift apart.
public struct DownloadView: Codable, Sendable, Hashable {
    public var id: String
    public var url: String
    public var status: String
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

    public init(_ record: DownloadRecord, live: Progress?) {
        id = record.id.rawValue
        url = record.request.url.absoluteString
        status = record.status.rawValue
        let running = record.status == .running
        completedLength = running ? max(live?.completed ?? 0, record.completedLength) : record.completedLength
        totalLength = record.expectedLength ?? (running ? live?.total : nil)
        fileName = record.fileName
        directory = record.request.directory
        path = record.fileName.map { Paths.join(record.request.directory, $0) }
        priority = record.request.priority
        speed = running ? live?.bytesPerSecond ?? 0 : 0
        error = record.error.map(ErrorView.init)
        createdAt = record.createdAt
    }
}

public struct ErrorView: Codable, Sendable, Hashable {
    public var code: String
    public var message: String

    public init(_ error: HaulError) {
        code = error.code.rawValue
        message = error.description
    }
}

/// `{"error": {...}}`: the body of every error answer.
public struct ErrorBody: Codable, Sendable {
    public var error: ErrorView
}

/// One download to add. Only `url` is required.
public struct AddRequest: Codable, Sendable {
    public var url: String
    public var directory: String?
    public var fileName: String?
    public var priority: Int?
    public var checksum: String?
    public var headers: [String: String]?

    public init(url: String, directory: String? = nil, fileName: String? = nil, priority: Int? = nil,
                checksum: String? = nil, headers: [String: String]? = nil) {
        self.url = url
        self.directory = directory
        self.fileName = fileName
        self.priority = priority
        self.checksum = checksum
        self.headers = headers
    }

    /// The engine's request, every field checked; errors name the field.
    func downloadRequest(defaultDirectory: String) throws(HaulError) -> DownloadRequest {
        guard (directory ?? defaultDirectory).hasPrefix("/") else {
            throw HaulError(.usage, "directory must be an absolute path: \(directory ?? defaultDirectory)")
        }
        // One spelling per place, or `/d/` and `/d` would be two downloads of the same file.
        let directory = Self.normalized(directory ?? defaultDirectory)
        for (name, value) in headers ?? [:] {
            // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
            guard !name.isEmpty, !(name + value).utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }),
                  !name.contains(where: { $0 == ":" || $0 == " " }) else {
                throw HaulError(.usage, "header '\(name.prefix(40))' is not a valid HTTP header")
            }
        }
        if let fileName, fileName.contains("/") || FileNameSanitizer.sanitize(fileName) != fileName {
            throw HaulError(.usage, "fileName '\(fileName)' is not allowed: a plain file name, without '/'")
        }
        let destination: DownloadRequest.Destination = fileName.map { .file(Paths.join(directory, $0)) } ?? .directory(directory)
        return try DownloadRequest(
            url: RemoteURL(url), destination: destination,
            checksum: try checksum.map { text throws(HaulError) in try Checksum(parsing: text) },
            headers: HTTPHeaderList((headers ?? [:]).sorted { $0.key < $1.key }.map { .init(name: $0.key, value: $0.value) }),
            priority: priority ?? 0)
    }
}

extension AddRequest {
    /// Absolute, without `.`, `..`, repeated or trailing slashes.
    static func normalized(_ path: String) -> String {
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
}

public struct MoveRequest: Codable, Sendable {
    public var to: QueueMove
}

public struct OptionsView: Codable, Sendable {
    public var maxConcurrentDownloads: Int
    public var directory: String
}

public struct OptionsChange: Codable, Sendable {
    public var maxConcurrentDownloads: Int?

    public init(maxConcurrentDownloads: Int?) {
        self.maxConcurrentDownloads = maxConcurrentDownloads
    }
}

public struct SummaryView: Codable, Sendable {
    public var downloadSpeed: Double
    public var counts: [String: Int]
    public var maxConcurrentDownloads: Int

    init(_ summary: QueueSummary) {
        downloadSpeed = summary.downloadSpeed
        counts = Dictionary(uniqueKeysWithValues: DownloadStatus.allCases.map { ($0.rawValue, summary.counts[$0] ?? 0) })
        maxConcurrentDownloads = summary.maxConcurrentDownloads
    }
}

/// One Server-Sent Event's data.
public struct EventView: Codable, Sendable {
    public var type: String
    public var id: String
    /// The download's status after the event.
    public var status: String
    public var completedLength: Int64?
    public var totalLength: Int64?
    public var speed: Double?
    public var path: String?
    public var error: ErrorView?
    public var attempt: Int?
    public var delay: Double?
    public var reason: String?

    init(_ event: DownloadEvent) {
        id = event.id.rawValue
        switch event.kind {
        case .queued: (type, status) = ("queued", "queued")
        case .started(let offset):
            (type, status) = ("started", "running")
            completedLength = offset
        case .progress(let progress):
            (type, status) = ("progress", "running")
            completedLength = progress.completed
            totalLength = progress.total
            speed = progress.bytesPerSecond
        case .retrying(let attempt, let delay, let error):
            (type, status) = ("retrying", "running")
            self.attempt = attempt
            self.delay = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            self.error = ErrorView(error)
        case .restarted(let reason):
            (type, status) = ("restarted", "running")
            self.reason = reason
        case .paused: (type, status) = ("paused", "paused")
        case .interrupted: (type, status) = ("interrupted", "running")
        case .completed(let path), .alreadyComplete(let path):
            (type, status) = ("completed", "completed")
            self.path = path
        case .failed(let error):
            (type, status) = ("failed", "failed")
            self.error = ErrorView(error)
        case .removed: (type, status) = ("removed", "removed")
        }
    }
}
