import HaulCore

/// What happened to a download. One vocabulary for the daemon's event stream, `haul watch` and
/// `haul get --json`.
public enum EventType: String, Codable, Sendable, Hashable, CaseIterable {
    case queued, started, progress, retrying, restarted, paused, interrupted, completed, failed, removed
    /// What completes the name of content a download leads (its group's finish) could not be
    /// written: `group`, `name` and `error` say which and why; tried again at the next
    /// completion of one of its downloads and at the next start.
    case finishFailed
    /// `haul get --json` only: a failure not tied to one download (a bad list file, ...).
    case error
}

/// One event as JSON: a Server-Sent Event's data, a line of `haul get --json`.
///
/// `completedLength` is the bytes on disk (for `started`, where the transfer resumes from),
/// `totalLength` the bytes it will have, `speed` bytes per second. Keys that do not apply to
/// the event are left out, except that `started` and `progress` events from the daemon carry
/// the download's settings, `maxBytesPerSecond` then written even when null.
public struct EventView: Codable, Sendable, Hashable {
    public var type: EventType
    /// Nil only for `error` lines that concern no download.
    public var id: String?
    /// The download's status after the event.
    public var status: DownloadStatus?
    /// `haul get --json` names the URL of every event.
    public var url: String?
    public var completedLength: Int64?
    public var totalLength: Int64?
    public var speed: Double?
    public var path: String?
    /// True on the `completed` event of a file that was complete before this run.
    public var alreadyComplete: Bool?
    public var error: ErrorView?
    public var attempt: Int?
    /// Seconds until the next attempt (`retrying`).
    public var delay: Double?
    public var reason: String?
    /// Live connections (`progress` events).
    public var connections: Int?
    public var maxConnections: Int?
    public var maxBytesPerSecond: Int64?
    /// What the run cost on the wire, on the last line of `haul get --json`: requests sent,
    /// distinct connections they used, connections opened for them and TLS handshakes among
    /// those, and the HTTP versions spoken (`HTTP/1.1`, `HTTP/2`).
    public var requests: Int?
    public var connectionsUsed: Int?
    public var connectionsOpened: Int?
    public var tlsHandshakes: Int?
    public var httpVersions: [String]?
    /// On the last line of a download completed by this run (`haul get --json`): the digest its
    /// file was checked against before it got its name, and where that digest came from.
    public var verified: VerifiedView?
    /// `finishFailed`: the group (`GET /api/v1/groups`) and the name of content it stands for.
    public var group: String?
    public var name: String?

    public init(type: EventType, id: String?, status: DownloadStatus?) {
        self.type = type
        self.id = id
        self.status = status
    }

    public init(_ event: DownloadEvent) {
        id = event.id.rawValue
        switch event.kind {
        case .queued: (type, status) = (.queued, .queued)
        case .started(let offset):
            (type, status) = (.started, .running)
            completedLength = offset
        case .progress(let progress):
            (type, status) = (.progress, .running)
            completedLength = progress.completed
            totalLength = progress.total
            speed = progress.bytesPerSecond
            connections = progress.connections
        case .retrying(let attempt, let delay, let error):
            (type, status) = (.retrying, .running)
            self.attempt = attempt
            self.delay = delay.seconds
            self.error = ErrorView(error)
        case .restarted(let reason, _):
            (type, status) = (.restarted, .running)
            self.reason = reason
        case .paused: (type, status) = (.paused, .paused)
        case .interrupted: (type, status) = (.interrupted, .running)
        case .completed(let path):
            (type, status) = (.completed, .completed)
            self.path = path
        case .alreadyComplete(let path):
            (type, status) = (.completed, .completed)
            self.path = path
            alreadyComplete = true
        case .failed(let error):
            (type, status) = (.failed, .failed)
            self.error = ErrorView(error)
        case .removed: (type, status) = (.removed, .removed)
        case .finishFailed(let group, let name, let error):
            // Told of the group's leader, which completed with every other member.
            (type, status) = (.finishFailed, .completed)
            self.group = group.rawValue
            self.name = name
            self.error = ErrorView(error)
        }
    }

    /// The event that tells how a download left the schedule, with what its run cost when it ran.
    public init(_ outcome: DownloadOutcome) {
        self.init(outcome.finalEvent)
        if let transfer = outcome.transfer {
            requests = transfer.requests
            connectionsUsed = transfer.connectionsUsed
            connectionsOpened = transfer.connectionsOpened
            tlsHandshakes = transfer.tlsHandshakes
            httpVersions = transfer.httpVersions.sorted()
        }
        if outcome.status == .completed, !outcome.alreadyComplete, let digest = outcome.record?.expectedDigest {
            verified = VerifiedView(digest)
        }
    }

    /// A failure that concerns no one download.
    public static func error(_ error: HaulError) -> EventView {
        var view = EventView(type: .error, id: nil, status: nil)
        view.error = ErrorView(error)
        return view
    }

    /// Whether the event reports the download's settings (`maxConnections`, `maxBytesPerSecond`).
    public var carriesSettings: Bool { type == .started || type == .progress }

    private enum CodingKeys: String, CodingKey {
        case type, id, status, url, completedLength, totalLength, speed, path, alreadyComplete, error, attempt, delay,
            reason
        case connections, maxConnections, maxBytesPerSecond
        case requests, connectionsUsed, connectionsOpened, tlsHandshakes, httpVersions, verified
        case group, name
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(url, forKey: .url)
        try container.encodeIfPresent(completedLength, forKey: .completedLength)
        try container.encodeIfPresent(totalLength, forKey: .totalLength)
        try container.encodeIfPresent(speed, forKey: .speed)
        try container.encodeIfPresent(path, forKey: .path)
        try container.encodeIfPresent(alreadyComplete, forKey: .alreadyComplete)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encodeIfPresent(attempt, forKey: .attempt)
        try container.encodeIfPresent(delay, forKey: .delay)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(connections, forKey: .connections)
        try container.encodeIfPresent(maxConnections, forKey: .maxConnections)
        if maxConnections != nil {
            try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond)
        }
        try container.encodeIfPresent(requests, forKey: .requests)
        try container.encodeIfPresent(connectionsUsed, forKey: .connectionsUsed)
        try container.encodeIfPresent(connectionsOpened, forKey: .connectionsOpened)
        try container.encodeIfPresent(tlsHandshakes, forKey: .tlsHandshakes)
        try container.encodeIfPresent(httpVersions, forKey: .httpVersions)
        try container.encodeIfPresent(verified, forKey: .verified)
        try container.encodeIfPresent(group, forKey: .group)
        try container.encodeIfPresent(name, forKey: .name)
    }
}

/// Which digest a finished file was checked against: `{"algorithm": "sha-256", "from":
/// "Repr-Digest"}`; `from` is `checksum` (the request's own), `Repr-Digest`, `Content-Digest`
/// or `Digest`.
public struct VerifiedView: Codable, Sendable, Hashable {
    public var algorithm: String
    public var from: String

    public init(_ digest: ExpectedDigest) {
        algorithm = digest.checksum.algorithm.rawValue
        from = digest.origin.name
    }
}
