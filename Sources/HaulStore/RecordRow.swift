import HaulCore
import NIOConcurrencyHelpers
import SQLiteNIO

/// A row of `downloads` and a `DownloadRecord`, through the stored form both stores share
/// (HaulCore's `StoredRecord`): the record's JSON plus the columns the queue is ordered,
/// filtered and indexed by.
enum RecordRow {
    static let columns = StoredRecord.columns

    /// The statements that insert or update `rows`, as few as SQLite's bind limit allows.
    static func upserts(_ rows: [StoredRecord]) -> [(sql: String, binds: [SQLiteData])] {
        let rowsPerStatement = 32_000 / columns.count
        var statements: [(sql: String, binds: [SQLiteData])] = []
        var start = 0
        while start < rows.count {
            let page = rows[start..<min(rows.count, start + rowsPerStatement)]
            var binds: [SQLiteData] = []
            binds.reserveCapacity(page.count * columns.count)
            for row in page { Self.binds(row, into: &binds) }
            statements.append((upsertSQL(rows: page.count), binds))
            start += page.count
        }
        return statements
    }

    /// One statement that inserts or updates `rows` records: atomic, and one fsync for all.
    private static func upsertSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let values = Array(repeating: row, count: rows).joined(separator: ", ")
        // A store that keeps no credentials writes NULL, which leaves those stored before alone.
        let updates = columns.dropFirst().map {
            $0 == "credentials" ? "credentials = COALESCE(excluded.credentials, credentials)" : "\($0) = excluded.\($0)"
        }.joined(separator: ", ")
        return "INSERT INTO downloads (\(columns.joined(separator: ", "))) VALUES \(values) "
            + "ON CONFLICT(id) DO UPDATE SET \(updates)"
    }

    private static func binds(_ row: StoredRecord, into binds: inout [SQLiteData]) {
        binds.append(.text(row.id))
        binds.append(.text(row.identity))
        binds.append(.text(row.status))
        binds.append(.integer(row.priority))
        binds.append(.integer(SQLiteInt64(row.position)))
        binds.append(.integer(SQLiteInt64(row.createdAt)))
        binds.append(.text(row.directory))
        binds.append(row.fileName.map { .text($0) } ?? .null)
        binds.append(.text(row.record))
        binds.append(row.credentials.map { .text($0) } ?? .null)
    }

    /// Read by position: the statements that read records select `selectColumns`, in this
    /// order, which spares a lookup by name per column. A row whose JSON is the text `cache`
    /// parsed before is not parsed again.
    static func decode(_ row: SQLiteRow, cache: NIOLockedValueBox<StoredRecordCache>) throws -> DownloadRecord {
        let values = row.columns
        guard values.count == 7, let id = values[0].data.string, let status = values[1].data.string,
            let priority = values[2].data.integer, let position = values[3].data.integer,
            let json = values[5].data.string
        else {
            throw HaulError(
                .store, "download \(values.first?.data.string ?? "without an id") in the store cannot be read",
                cause: "a column is missing")
        }
        let parsed: DownloadRecord
        if let cached = cache.withLockedValue({ $0.record(id: id, json: json) }) {
            parsed = cached
        } else {
            parsed = try StoredRecord.parse(id: id, record: json)
            cache.withLockedValue { $0.keep(parsed, id: id, json: json) }
        }
        return try StoredRecord.read(
            status: status, priority: priority, position: Int64(position),
            fileName: values[4].data.string, parsed: parsed, credentials: values[6].data.string)
    }

    /// The columns a record is read from, in `decode`'s order.
    static let selectColumns = "id, status, priority, position, file_name, record, credentials"
}
