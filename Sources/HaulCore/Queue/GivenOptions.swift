/// What a request carries that the store may not keep, or that the latest command decides,
/// held by the queue in the download's entry for its runs (`DownloadQueue.Entry`): its
/// credentials (a store opened without `keepsCredentials` returns records without them) and
/// `-N` / `--remote-time` (stored with the record, but a property of the command: run again
/// without them, it runs without them). Dropped with the download (completed or removed), so a
/// daemon keeps none for downloads it no longer has.
public struct GivenOptions: Sendable, Hashable {
    /// The latest credentials a request gave; nil when none were given (the stored ones, if any,
    /// are used).
    public var credentials: Credentials?
    /// The latest `Authorization` a request gave (`DownloadRequest.authorization`).
    public var authorization: String?
    /// `-N` and `--remote-time` as the latest request gave them; nil until a request is taken (the
    /// stored ones are used).
    public var timestamps: GivenTimestamps?

    /// Options given so far; nothing by default.
    public init(credentials: Credentials? = nil, timestamps: GivenTimestamps? = nil) {
        self.credentials = credentials
        self.timestamps = timestamps
    }

    /// What `request` gives: a request without credentials (a re-add by id) leaves those given
    /// before.
    public mutating func take(_ request: DownloadRequest) {
        if let credentials = request.credentials { self.credentials = credentials }
        if let authorization = request.authorization { self.authorization = authorization }
        timestamps = GivenTimestamps(request)
    }

    /// The stored request with what was given applied: the latest credentials win over stored
    /// ones (a changed password).
    public func apply(to request: inout DownloadRequest) {
        if let credentials { request.credentials = credentials }
        if let authorization { request.authorization = authorization }
        timestamps?.apply(to: &request)
    }
}

/// `-N` and `--remote-time` of a request.
public struct GivenTimestamps: Sendable, Hashable {
    /// `-N`: ask with `If-Modified-Since`, and keep the local file when the server's is not newer.
    public var timestamping: Bool
    /// `--remote-time`: give the published file the server's `Last-Modified` time.
    public var remoteTime: Bool

    /// Both options as `request` has them.
    public init(_ request: DownloadRequest) {
        timestamping = request.timestamping
        remoteTime = request.remoteTime
    }

    /// Sets both options on `request`, whatever it had.
    public func apply(to request: inout DownloadRequest) {
        request.timestamping = timestamping
        request.remoteTime = remoteTime
    }
}
