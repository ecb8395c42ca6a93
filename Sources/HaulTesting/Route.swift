/// What the test server serves at one path, and how it misbehaves.
///
/// A route is plain data so a test can describe a whole scenario up front (for example "drop the
/// first two requests after 100 KB, then serve normally") and hand it to
/// ``TestServer/setRoute(_:_:)``.
public struct Route: Sendable {
    /// The entity served.
    public var payload: Payload
    /// Sent as `ETag` and accepted by `If-Range` when set. Defaults to
    /// ``defaultETag(for:)`` (`"<seed>-<length>"`, quoted and strong).
    public var etag: String?
    /// Sent as `Last-Modified` and accepted by `If-Range` when set. A request whose
    /// `If-Modified-Since` is this date or later gets 304 Not Modified without a body.
    public var lastModified: String?
    /// Sent verbatim as `Content-Disposition` when set, for file-name tests.
    public var contentDisposition: String?
    /// When false the server always answers 200 with the whole body and sends no
    /// `Accept-Ranges` header, like servers that cannot resume.
    public var acceptsRanges: Bool
    /// When true, 200 and 206 bodies use `Transfer-Encoding: chunked` and no `Content-Length`,
    /// so the client cannot know the size in advance.
    public var chunked: Bool
    /// Body bytes per second, or nil for as fast as the client reads. Makes a transfer slow
    /// enough to be paused, cancelled or observed through ``TestServer/bodyBytesSent(to:)``.
    public var throttle: Int?
    /// The fault for the k-th request (0-based, counted from ``TestServer/setRoute(_:_:)``) to
    /// this path; past the end, ``then`` applies.
    public var script: [Fault]
    /// The fault for every request after ``script`` is used up, e.g. `.dropAfter(100_000)`.
    public var then: Fault
    /// When set, requests that arrive while `limit` payload responses to this path are still
    /// being streamed are refused (see ``ConnectionCap``), like a server with a per-client
    /// connection limit. Refused requests do not use up a ``script`` entry.
    public var connectionCap: ConnectionCap?
    /// Per-connection throttles in bytes per second, to make stragglers: the n-th TCP connection
    /// that sends a request to this path (n counted from 0 since ``TestServer/setRoute(_:_:)``,
    /// in order of each connection's first request here, refused ones included) gets
    /// `connectionThrottles[n % count]` for every request it makes to this path, instead of
    /// ``throttle``. `[4 << 20, 4 << 20, 256 << 10]` makes every third connection slow.
    public var connectionThrottles: [Int]?
    /// How the route mishandles validators, as some CDNs do (`.none`: as RFC 9110 says).
    public var validatorQuirk: ValidatorQuirk = .none
    /// Fields every request to this path must carry with exactly these values (compared by
    /// name without case), or it is answered 403 whatever its fault: a site that serves a file
    /// only to its page's visitor (Referer, User-Agent, the session's cookie). Several fields
    /// of one name are compared as one, their values joined with `, `.
    public var requiredHeaders: [(String, String)] = []
    /// When set, payload bodies to this path wait (their heads sent) until the gate opens: a
    /// test that needs several responses streaming at once gets them however slow the machine.
    public var bodyGate: BodyGate?
    /// Extra header fields sent as given with every answer that carries the entity (200 and 206,
    /// whatever part a 206 carries), after the usual ones: a server's digests (`Repr-Digest`,
    /// `Content-Digest`, `Digest`), computed by the test. A ``Fault/switchEntity(_:etag:)`` does
    /// not change them.
    public var entityHeaders: [(String, String)]

    /// Creates a route whose ETag is ``defaultETag(for:)``.
    public init(
        payload: Payload,
        lastModified: String? = nil,
        contentDisposition: String? = nil,
        acceptsRanges: Bool = true,
        chunked: Bool = false,
        throttle: Int? = nil,
        script: [Fault] = [],
        then: Fault = .none,
        connectionCap: ConnectionCap? = nil,
        connectionThrottles: [Int]? = nil,
        bodyGate: BodyGate? = nil,
        entityHeaders: [(String, String)] = []
    ) {
        self.init(
            payload: payload,
            etag: Route.defaultETag(for: payload),
            lastModified: lastModified,
            contentDisposition: contentDisposition,
            acceptsRanges: acceptsRanges,
            chunked: chunked,
            throttle: throttle,
            script: script,
            then: then,
            connectionCap: connectionCap,
            connectionThrottles: connectionThrottles,
            bodyGate: bodyGate,
            entityHeaders: entityHeaders
        )
    }

    /// Creates a route with an explicit ETag; pass nil to send no ETag at all.
    public init(
        payload: Payload,
        etag: String?,
        lastModified: String? = nil,
        contentDisposition: String? = nil,
        acceptsRanges: Bool = true,
        chunked: Bool = false,
        throttle: Int? = nil,
        script: [Fault] = [],
        then: Fault = .none,
        connectionCap: ConnectionCap? = nil,
        connectionThrottles: [Int]? = nil,
        bodyGate: BodyGate? = nil,
        entityHeaders: [(String, String)] = []
    ) {
        precondition(bodyGate.map { $0.requests >= 1 } ?? true, "a body gate needs at least one request")
        precondition(throttle.map { $0 > 0 } ?? true, "throttle must be positive")
        precondition(connectionCap.map { $0.limit >= 0 } ?? true, "connection cap must not be negative")
        precondition(
            connectionThrottles.map { !$0.isEmpty && $0.allSatisfy { $0 > 0 } } ?? true,
            "connectionThrottles must be non-empty and positive"
        )
        self.payload = payload
        self.etag = etag
        self.lastModified = lastModified
        self.contentDisposition = contentDisposition
        self.acceptsRanges = acceptsRanges
        self.chunked = chunked
        self.throttle = throttle
        self.script = script
        self.then = then
        self.connectionCap = connectionCap
        self.connectionThrottles = connectionThrottles
        self.bodyGate = bodyGate
        self.entityHeaders = entityHeaders
    }

    /// The ETag a route gets unless told otherwise: `"<seed>-<length>"`, quoted and strong, so
    /// two routes serving the same payload agree and different payloads differ.
    public static func defaultETag(for payload: Payload) -> String {
        "\"\(payload.seed)-\(payload.length)\""
    }
}

/// A limit on how many payload responses to one path may be streamed at once.
///
/// A response counts from the moment its head is sent until its body has been handed to the
/// kernel in full or its connection closes (a stalled response counts until its connection
/// closes). A request that arrives while `limit` responses are counting is answered with
/// `status`, `Retry-After: retryAfter` when set, and a short text body, and does not use up a
/// ``Route/script`` entry. Only responses that carry payload bytes count (not HEAD, 416,
/// redirects or text answers).
public struct ConnectionCap: Sendable {
    /// Payload responses allowed in flight at once.
    public var limit: Int
    /// The refusal status, typically 503 or 429.
    public var status: Int
    /// Sent verbatim as `Retry-After` when set, e.g. `"1"`.
    public var retryAfter: String?

    public init(limit: Int, status: Int = 503, retryAfter: String? = nil) {
        self.limit = limit
        self.status = status
        self.retryAfter = retryAfter
    }
}

/// Holds payload bodies back until `requests` requests have reached the path since
/// ``TestServer/setRoute(_:_:)`` (refused ones included), or until a body has waited `atMost`.
/// Heads go out at once, so a client that opens more connections on seeing the first answer's
/// head does so; the bodies then all start together. `atMost` only keeps a client that never
/// sends that many requests from waiting forever: the test's assertions then tell.
public struct BodyGate: Sendable {
    public var requests: Int
    public var atMost: Duration

    public init(requests: Int, atMost: Duration = .seconds(10)) {
        self.requests = requests
        self.atMost = atMost
    }
}

/// Validator behaviours of real CDNs that break the textbook resume.
public enum ValidatorQuirk: Sendable, Equatable {
    case none
    /// `If-Range` with an ETag never matches (the whole body comes back with a 200); only an
    /// HTTP date does (aria2-next #43).
    case ifRangeDatesOnly
    /// Every response carries a new ETag (`"<etag>-<n>"`, n the request's number) for the same
    /// bytes, and an `If-Range` with an older one does not match (aria2-next #46).
    case etagPerRequest
}
