// The code of the article "A custom store or transport" (Haul.docc/CustomStoreAndTransport.md).
import Haul
import HaulCore

/// A store that keeps its records in another store and tells the app of each change: a list in
/// the app's interface, say, that must show what the manager saved.
struct ObservedStore: DownloadStore {
    let base: any DownloadStore
    let changed: @Sendable (DownloadRecord) -> Void

    func save(_ record: DownloadRecord) async throws {
        try await base.save(record) // atomic: the whole record, or nothing
        changed(record)
    }

    func record(_ id: DownloadID) async throws -> DownloadRecord? {
        try await base.record(id)
    }

    func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        try await base.record(matching: request)
    }

    func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
        try await base.records(status: status) // in queue order
    }

    func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID? {
        try await base.fileNameHolder(fileName, directory: directory, except: id)
    }

    func delete(_ id: DownloadID) async throws {
        try await base.delete(id)
    }
}

/// A manager on that store, in memory (nothing survives the process), running while `body` runs.
func withManagerTellingTheApp<Result>(
    state: String, changed: @escaping @Sendable (DownloadRecord) -> Void,
    _ body: (DownloadManager) async throws -> Result
) async throws -> Result {
    let store = ObservedStore(base: InMemoryDownloadStore(), changed: changed)
    let manager = try await DownloadManager(configuration: .init(stateDirectory: state), store: store)
    return try await manager.withRunning(body) // shut down after: the store's close is the manager's
}
