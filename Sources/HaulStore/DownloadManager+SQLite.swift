import Haul
import HaulCore
import Logging

extension DownloadManager {
    /// A manager on the SQLite store in `configuration.stateDirectory`, with AsyncHTTPClient,
    /// running for as long as `body` runs; then it shuts down (its runs checkpointed, left to
    /// resume at the next start) and closes the store, however `body` ends.
    ///
    /// ```swift
    /// try await DownloadManager.withManager(configuration: .init(stateDirectory: state)) { manager in
    ///     let record = try await manager.add(request)
    ///     return try await manager.outcome(of: record.id)
    /// }
    /// ```
    public static func withManager<Result>(
        configuration: Configuration, _ body: (DownloadManager) async throws -> Result
    ) async throws -> Result {
        try await DownloadManager(configuration: configuration).withRunning(body)
    }

    /// Opens (creating if needed) the SQLite store in `configuration.stateDirectory` and uses
    /// AsyncHTTPClient. Nothing runs until `run()` does (in a `ServiceGroup`, or through
    /// `withRunning`); `shutdown()` closes the store.
    ///
    /// Here rather than in the engine, so that `Haul` knows its store only through HaulCore's
    /// `DownloadStore`: this is where the engine and SQLite are put together.
    public init(configuration: Configuration) async throws {
        try Self.prepareStateDirectory(configuration.stateDirectory)
        let logger = configuration.logger
        let store = try await SQLiteDownloadStore.open(
            path: Paths.join(configuration.stateDirectory, "haul.sqlite"),
            keepsCredentials: configuration.keepsCredentials, logger: logger)
        let closeStore: @Sendable () async -> Void = {
            do {
                try await store.close()
            } catch {
                // Every write was committed before its caller returned; only the file handles are at stake.
                logger.warning(
                    "cannot close the state database", metadata: ["path": "\(store.path)", "error": "\(error)"])
            }
        }
        do {
            try await self.init(configuration: configuration, store: store, closeStore: closeStore)
        } catch {
            // No manager owns the store: closed here (its connection traps in its deinit otherwise).
            await closeStore()
            throw error
        }
    }
}
