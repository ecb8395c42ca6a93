/// What a request carries that the store may not keep, or that the latest command decides,
/// held by the queue in the download's entry for its runs (`DownloadQueue.Entry`): its
/// credentials (a store opened without `keepsCredentials` returns records without them) and
/// `-N` / `--remote-time` (stored with the record, but a property of the command: run again
/// without them, it runs without them). Dropped with the download (completed or removed), so a
/// daemon keeps none for downloads it no longer has.
public struct GivenOptions: Sendable, Hashable {
    public var credentials: Credentials?
    public var timestamps: GivenTimestamps?

    public init(credentials: Credentials? = nil, timestamps: GivenTimestamps? = nil) {
        self.credentials = credentials
        self.timestamps = timestamps
    }

    /// What `request` gives: a request without credentials (a re-add by id) leaves those given
    /// before.
    public mutating func take(_ request: DownloadRequest) {
        if let credentials = request.credentials { self.credentials = credentials }
        timestamps = GivenTimestamps(request)
    }

    /// The stored request with what was given applied: the latest credentials win over stored
    /// ones (a changed password).
    public func apply(to request: inout DownloadRequest) {
        if let credentials { request.credentials = credentials }
        timestamps?.apply(to: &request)
    }
}

/// `-N` and `--remote-time` of a request.
public struct GivenTimestamps: Sendable, Hashable {
    public var timestamping: Bool
    public var remoteTime: Bool

    public init(_ request: DownloadRequest) {
        timestamping = request.timestamping
        remoteTime = request.remoteTime
    }

    public func apply(to request: inout DownloadRequest) {
        request.timestamping = timestamping
        request.remoteTime = remoteTime
    }
}
