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
    /// Sent as `Last-Modified` and accepted by `If-Range` when set.
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

    /// Creates a route whose ETag is ``defaultETag(for:)``.
    public init(
        payload: Payload,
        lastModified: String? = nil,
        contentDisposition: String? = nil,
        acceptsRanges: Bool = true,
        chunked: Bool = false,
        throttle: Int? = nil,
        script: [Fault] = [],
        then: Fault = .none
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
            then: then
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
        then: Fault = .none
    ) {
        precondition(throttle.map { $0 > 0 } ?? true, "throttle must be positive")
        self.payload = payload
        self.etag = etag
        self.lastModified = lastModified
        self.contentDisposition = contentDisposition
        self.acceptsRanges = acceptsRanges
        self.chunked = chunked
        self.throttle = throttle
        self.script = script
        self.then = then
    }

    /// The ETag a route gets unless told otherwise: `"<seed>-<length>"`, quoted and strong, so
    /// two routes serving the same payload agree and different payloads differ.
    public static func defaultETag(for payload: Payload) -> String {
        "\"\(payload.seed)-\(payload.length)\""
    }
}
