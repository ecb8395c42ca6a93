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

    func host(_ id: DownloadID) -> String? {
        runs[id]?.host ?? (manager.liveProgress(id) != nil ? manager.fleetHost : nil)
    }

    func view(_ record: DownloadRecord) -> DownloadView {
        DownloadView(record, live: progress(record.id), host: host(record.id))
    }
}
