import HaulCore

extension DownloadManager {
    /// Changes a download's `Referer` and `User-Agent` (aria2's `changeOption`): nil leaves one
    /// as it is, an empty value removes it. Stored, and a running download sends them from its
    /// next request on (its run's record carries them, so its checkpoints keep them).
    public func setReferer(_ referer: String?, userAgent: String?, for id: DownloadID) async throws {
        try await inTurn { [self] in
            var record = try await existing(id)
            let headers = try RequestHeaderOptions.applying(
                referer: referer, userAgent: userAgent, to: record.request.headers)
            record.request.headers = headers
            handles[id]?.stop.changeHeaders(headers)
            try await store.save(record)
            live.update(id) { $0.request.headers = headers }
        }
    }
}
