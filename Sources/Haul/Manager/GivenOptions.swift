import HaulCore

/// What a request carries that the store may not keep, held in memory by the manager for the
/// request's runs: its credentials (a store opened without `keepsCredentials` returns records
/// without them) and `-N` / `--remote-time` (a property of the command: run again, it gives them
/// again). One entry per download, dropped with the download (completed or removed), so a daemon
/// keeps none for downloads it no longer has.
struct GivenOptions: Sendable {
    var credentials: Credentials?
    var timestamps: GivenTimestamps?
}

/// `-N` and `--remote-time` of a request.
struct GivenTimestamps: Sendable, Hashable {
    var timestamping: Bool
    var remoteTime: Bool

    init(_ request: DownloadRequest) {
        timestamping = request.timestamping
        remoteTime = request.remoteTime
    }

    func apply(to request: inout DownloadRequest) {
        request.timestamping = timestamping
        request.remoteTime = remoteTime
    }
}
