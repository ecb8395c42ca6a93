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
