// The code of the article "Many downloads with a queue" (Haul.docc/ManyDownloads.md).
import Haul
import HaulCore
import HaulStore
import Logging
import ServiceLifecycle
import UnixSignals

/// Downloads every URL into `directory`, two at a time, and returns each one's outcome by URL.
func downloadAll(_ urls: [String], into directory: String, state: String) async throws -> [String: DownloadOutcome] {
    let configuration = DownloadManager.Configuration(stateDirectory: state, maxConcurrentDownloads: 2)
    return try await DownloadManager.withManager(configuration: configuration) { manager in
        // Subscribed before adding: exactly one outcome per download that ends, none dropped.
        let outcomes = manager.outcomes()
        let requests = try urls.map { try DownloadRequest(url: try RemoteURL($0), destination: .directory(directory)) }
        let records = try await manager.add(requests) // one batch: one transaction in the store
        var urlOf: [DownloadID: String] = [:]
        for record in records { urlOf[record.id] = record.request.url.absoluteString }
        var ended: [String: DownloadOutcome] = [:]
        for await outcome in outcomes {
            guard let url = urlOf[outcome.id] else { continue }
            ended[url] = outcome
            if ended.count == records.count { break }
        }
        return ended
    }
}

/// Reorders and throttles a queue while it runs.
func steer(_ manager: DownloadManager, urgent: DownloadID) async throws {
    _ = try await manager.move(urgent, .top) // the next free slot is its
    await manager.setMaxConcurrentDownloads(4) // more slots go to the head of the queue at once
    await manager.setMaxBytesPerSecond(10 << 20) // 10 MiB/s for all downloads together
    let summary = try await manager.summary()
    print("\(summary.counts[.running] ?? 0) running, \(summary.counts[.queued] ?? 0) waiting")
    let paused = try await manager.pauseAll() // a checkpoint each; the queue keeps its order
    print("paused \(paused)")
    _ = try await manager.resumeAll()
}

/// In a server: the manager is a `Service`; a graceful shutdown checkpoints every download.
func serve(_ manager: DownloadManager, with services: [any Service], logger: Logger) async throws {
    let group = ServiceGroup(
        services: [manager] + services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    try await manager.prepareToRun() // the other services may call it before its run() begins
    try await group.run()
}
