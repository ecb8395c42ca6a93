import HaulCore

/// `-N` and `--remote-time` of a request, which the store does not keep: the manager holds them
/// in memory for the request's runs, as it holds credentials.
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
