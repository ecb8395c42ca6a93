import HaulCore

/// A store that keeps records in memory only: for library users who want no state on disk,
/// and for tests of the engine that are not about persistence.
public actor InMemoryDownloadStore: DownloadStore {
    private var records: [DownloadID: DownloadRecord] = [:]

    public init() {}

    public func save(_ record: DownloadRecord) { records[record.id] = record }

    public func record(_ id: DownloadID) -> DownloadRecord? { records[id] }

    public func record(matching request: DownloadRequest) -> DownloadRecord? {
        records.values.first { $0.status != .removed && $0.request.identity == request.identity }
    }

    public func records(status: DownloadStatus?) -> [DownloadRecord] {
        records.values
            .filter { status == nil || $0.status == status }
            .sorted { $0.runsBefore($1) }
    }

    public func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) -> DownloadID? {
        records.values.first {
            $0.id != id && $0.status != .removed && $0.fileName == fileName && $0.request.directory == directory
        }?.id
    }

    public func delete(_ id: DownloadID) { records[id] = nil }
}
