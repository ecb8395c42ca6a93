// The library example of README.md, as README shows it (`DocumentationCodeBlocksTests` checks
// that README's block is this code).
import Haul
import HaulCore
import HaulStore // the manager on SQLite: DownloadManager(configuration:)

/// Downloads `url` into `directory`, its state kept under `stateDirectory`, and says how it ended.
func downloadOnce(_ url: String, into directory: String, stateDirectory: String) async throws -> DownloadOutcome {
    let manager = try await DownloadManager(configuration: .init(stateDirectory: stateDirectory))
    let record = try await manager.add(DownloadRequest(url: try RemoteURL(url), destination: .directory(directory)))
    let outcome = try await manager.outcome(of: record.id) // waits for the end; never misses it
    print(outcome.status, outcome.failure?.message ?? "") // completed, failed, paused, ...
    await manager.shutdown() // checkpoints what is running
    return outcome
}
