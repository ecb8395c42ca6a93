/// One request as the test server received it.
///
/// The server records every request before answering it, so a test can assert what the download
/// manager actually sent (resume offsets in `Range`, validators in `If-Range`, the order of
/// retries) rather than only what it ended up writing to disk.
public struct RecordedRequest: Sendable {
    /// The request method as sent, e.g. `GET` or `HEAD`.
    public var method: String
    /// The path without the query string; this is what routes are matched against.
    public var path: String
    /// The request target exactly as sent, query string included.
    public var uri: String
    /// All header fields in the order sent, with their original spelling.
    public var headers: [(name: String, value: String)]
    /// The request body's bytes as received so far (all of them once the request has ended): what
    /// a webhook POSTed, for a test to check its signature.
    public var body: [UInt8]

    public init(method: String, path: String, uri: String, headers: [(name: String, value: String)], body: [UInt8] = [])
    {
        self.method = method
        self.path = path
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    /// The first value of the header field `name`, compared case-insensitively as HTTP requires.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// The `Range` header, the one a resuming client must get right.
    public var range: String? { header("Range") }
}
