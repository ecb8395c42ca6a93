import Haul
import HaulAPI
import HaulCore

/// The live side of downloads about to be shown: this process's own runs, and in a fleet the
/// other hosts' runs as their last renewal stored them (a second old at most), with the host.
struct LiveRuns: Sendable {
    let manager: DownloadManager
    let runs: [DownloadID: FleetRun]

    static func lookup(_ manager: DownloadManager, _ ids: [DownloadID]) async -> LiveRuns {
        LiveRuns(manager: manager, runs: manager.fleetHost == nil ? [:] : await manager.fleetRuns(ids))
    }

    /// The manager's summary with its running count and speed from one set of downloads: the
    /// ones stored running (what `tellActive` and `?status=running` list, every host's in a
    /// fleet), each at its own live speed. The count came from the store and the speed from
    /// every live figure, so a download counted as running could add nothing to the speed.
    static func summary(_ manager: DownloadManager) async throws -> QueueSummary {
        let summary = try await manager.summary()
        let running = try await manager.ids(status: .running)
        let live = await lookup(manager, running)
        var counts = summary.counts
        counts[.running] = running.count
        return QueueSummary(
            counts: counts, downloadSpeed: running.reduce(0) { $0 + (live.progress($1)?.bytesPerSecond ?? 0) },
            maxConcurrentDownloads: summary.maxConcurrentDownloads)
    }

    func progress(_ id: DownloadID) -> Progress? {
        manager.liveProgress(id) ?? runs[id]?.progress
    }

    /// Its progress and host, from one read of this process's live figures.
    func view(_ record: DownloadRecord) -> DownloadView {
        let own = manager.liveProgress(record.id)
        let remote = runs[record.id]
        return DownloadView(
            record, live: own ?? remote?.progress, host: remote?.host ?? (own != nil ? manager.fleetHost : nil))
    }
}
