import HaulCore
import PostgresNIO

/// A row of `haul_downloads` and a `DownloadRecord`, through the stored form both stores share
/// (HaulCore's `StoredRecord`): the record as JSON (headers inside it) plus the columns the
/// queue is ordered and filtered by, which win over the JSON; credentials in their own column.
extension PostgresDownloadStore {
    /// A row read as `id, status, priority, position, record, credentials`.
    static func decode(_ row: (String, String, Int, Int64, String, String?)) throws -> DownloadRecord {
        try StoredRecord.read(
            id: row.0, status: row.1, priority: row.2, position: row.3, fileName: nil,
            record: row.4, credentials: row.5)
    }
}

extension StoredRecord {
    /// Binds `StoredRecord.columns`, in that order.
    func bind(into binds: inout PostgresBindings) {
        binds.append(id)
        binds.append(identity)
        binds.append(status)
        binds.append(priority)
        binds.append(position)
        binds.append(createdAt)
        binds.append(directory)
        if let fileName { binds.append(fileName) } else { binds.appendNull() }
        binds.append(record)
        if let credentials { binds.append(credentials) } else { binds.appendNull() }
    }
}
