import HaulCore

/// A new URL for a download that keeps its bytes: aria2's `changeUri`, the API's `PUT
/// /downloads/ID/urls`, `haul get` run again with another URL and the same `-o`.
extension DownloadManager {
    /// Gives a download that has not finished new URLs: `urls[0]` becomes its URL, the rest its
    /// mirrors. A running download stops at a checkpoint and goes on with them; a queued or
    /// failed one is queued again; a paused one stays paused. The bytes on disk are kept when
    /// the new URL serves the same file: when the first URL changes, its validator is
    /// forgotten (mirrors rarely share one), so the resume proves the file by its length and by
    /// the bytes it re-reads before the resume point; a different file starts over, and says so.
    @discardableResult
    public func setSources(_ urls: [RemoteURL], for id: DownloadID) async throws -> DownloadRecord {
        let (first, mirrors) = try DownloadRequest.checkedSources(urls)
        // A running download stops first, with its checkpoint: its runner owns the record.
        let work = try await inTurn { [self] in try await performCalling(queue.changingSources(of: existing(id))) }
        try await finish(work)
        return try await inTurn { [self] in
            let renewed = try queue.renewingSources(try await existing(id), url: first, mirrors: mirrors)
            _ = try await performCalling(queue.sourcesChanged(renewed))
            _ = try await performCalling(queue.sourcesSaved(renewed))
            return try await existing(id)
        }
    }
}
