import Haul
import HaulCore
import Logging

extension DownloadManager {
    /// Opens (creating if needed) the SQLite store in `configuration.stateDirectory` and uses
    /// AsyncHTTPClient. Call `shutdown()` when done; it closes the store.
    ///
    /// Here rather than in the engine, so that `Haul` knows its store only through HaulCore's
    /// `DownloadStore`: this is where the engine and SQLite are put together.
    public init(configuration: Configuration) async throws {
        try Self.prepareStateDirectory(configuration.stateDirectory)
        let store = try await SQLiteDownloadStore.open(path: Paths.join(configuration.stateDirectory, "haul.sqlite"),
                                                       keepsCredentials: configuration.keepsCredentials)
        let logger = configuration.logger
        try await self.init(configuration: configuration, store: store, closeStore: {
            do {
                try await store.close()
            } catch {
                logger.warning("cannot close the store", metadata: ["error": "\(error)"])
            }
        })
    }
}
