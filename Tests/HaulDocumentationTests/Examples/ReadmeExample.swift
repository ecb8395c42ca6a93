// The library example of README.md, as README shows it (`DocumentationCodeBlocksTests` checks
// that README's block is this code).
import Haul
import HaulCore
import HaulStore // the manager on SQLite: DownloadManager.withManager(configuration:)

/// Downloads `url` into `directory`, its state kept under `stateDirectory`, and says how it ended.
func downloadOnce(_ url: String, into directory: String, stateDirectory: String) async throws -> DownloadOutcome {
    // The manager runs while the closure does, then shuts down (what still runs is checkpointed).
    try await DownloadManager.withManager(configuration: .init(stateDirectory: stateDirectory)) { manager in
        let request = try DownloadRequest(url: try RemoteURL(url), destination: .directory(directory))
        let record = try await manager.add(request)
        let outcome = try await manager.outcome(of: record.id) // waits for the end; never misses it
        print(outcome.status, outcome.failure?.message ?? "") // completed, failed, paused, ...
        return outcome
    }
}
