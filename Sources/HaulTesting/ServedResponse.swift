/// One response as the test server sent it.
///
/// Complements ``RecordedRequest``: where that shows what a client asked, this shows what each
/// request got and how far its body went, so a test can check how a download was split over
/// connections (ranges, connection reuse, concurrency) and which requests a
/// ``ConnectionCap`` turned away. See ``TestServer/responses(to:)``.
public struct ServedResponse: Sendable, Equatable {
    /// The path without the query string.
    public var path: String
    /// The status code sent.
    public var status: Int
    /// The server-wide serial number of the TCP connection it went out on (0 for the first
    /// connection the server accepted), so responses on one keep-alive connection share it.
    public var connection: Int
    /// The payload bytes the body carries, as advertised by the head (the whole payload for a
    /// 200, the Content-Range for a 206), even if a fault cuts the body short; nil when no
    /// payload bytes are sent (text answers, redirects, HEAD, 416).
    public var range: Range<Int64>?
    /// Payload body bytes handed to the kernel so far; updated as they go out.
    public var bodyBytesSent: Int64
    /// True when a ``ConnectionCap`` refused the request.
    public var refused: Bool
    /// The bytes per second its body was held to (the route's throttle, or its connection's
    /// from ``Route/connectionThrottles``); nil when it went at full speed.
    public var throttle: Int?

    public init(
        path: String,
        status: Int,
        connection: Int,
        range: Range<Int64>?,
        bodyBytesSent: Int64 = 0,
        refused: Bool = false,
        throttle: Int? = nil
    ) {
        self.path = path
        self.status = status
        self.connection = connection
        self.range = range
        self.bodyBytesSent = bodyBytesSent
        self.refused = refused
        self.throttle = throttle
    }
}
