import HaulCore
import SQLiteNIO

/// The store's reads: ids, records and places by status, identity or id, counts, and who holds a
/// file name. All go through `read`, the reader connection, so a listing never waits behind the
/// checkpoints' fsyncs.
extension SQLiteDownloadStore {
    /// The ids with `status`, or (nil) every id but removed ones, in queue order, without
    /// reading the records.
    public func ids(status: DownloadStatus?) async throws -> [DownloadID] {
        let order = QueueOrder.sqlite
        let rows: [SQLiteRow]
        if let status {
            rows = try await read("SELECT id FROM downloads WHERE status = ? \(order)", [.text(status.rawValue)])
        } else {
            rows = try await read("SELECT id FROM downloads WHERE status != 'removed' \(order)")
        }
        return rows.compactMap { $0.column("id")?.string.map(DownloadID.init(rawValue:)) }
    }

    /// The records of `ids`, in any order, 500 ids per query; ids with no row are skipped.
    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        try await records(where: "id", in: ids.map(\.rawValue))
    }

    /// The id, priority and position of each download with `status`, in queue order, read from
    /// the columns alone (no record's JSON is parsed).
    public func places(status: DownloadStatus) async throws -> [WaitingQueue.Entry] {
        let rows = try await read(
            "SELECT id, priority, position FROM downloads WHERE status = ? \(QueueOrder.sqlite)",
            [.text(status.rawValue)])
        return rows.compactMap { row in
            guard let id = row.column("id")?.string else { return nil }
            return WaitingQueue.Entry(
                id: DownloadID(rawValue: id), priority: row.column("priority")?.integer ?? 0,
                position: Int64(row.column("position")?.integer ?? 0))
        }
    }

    /// The rows whose `column` is one of `values`, 500 values per query (SQLite's bind limit),
    /// each page in `order`.
    private func records(
        where column: String, in values: [String], _ condition: String = "",
        order: String = ""
    ) async throws -> [DownloadRecord] {
        var records: [DownloadRecord] = []
        var start = 0
        while start < values.count {
            let page = values[start..<min(values.count, start + 500)]
            let placeholders = Array(repeating: "?", count: page.count).joined(separator: ", ")
            let rows = try await read(
                """
                SELECT \(RecordRow.selectColumns) FROM downloads WHERE \(column) IN (\(placeholders)) \
                \(condition) \(order)
                """,
                page.map { .text($0) })
            records += try decode(rows)
            start += page.count
        }
        return records
    }

    /// Rows read with `RecordRow.selectColumns`, as records.
    private func decode(_ rows: [SQLiteRow]) throws -> [DownloadRecord] {
        try rows.map { try RecordRow.decode($0, cache: parsed) }
    }

    /// How many rows have each status, removed ones included; a status with none is absent.
    public func counts() async throws -> [DownloadStatus: Int] {
        let rows = try await read("SELECT status, COUNT(*) AS n FROM downloads GROUP BY status")
        var counts: [DownloadStatus: Int] = [:]
        for row in rows {
            if let text = row.column("status")?.string, let status = DownloadStatus(rawValue: text) {
                counts[status] = row.column("n")?.integer ?? 0
            }
        }
        return counts
    }

    /// The record with `id`, whatever its status; nil when there is none. Throws `.store` when
    /// its row cannot be read.
    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        let rows = try await read("SELECT \(RecordRow.selectColumns) FROM downloads WHERE id = ?", [.text(id.rawValue)])
        return try decode(rows).first
    }

    /// The newest live (not removed) record with `request`'s `identity`; nil when there is none.
    public func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        let rows = try await read(
            """
            SELECT \(RecordRow.selectColumns) FROM downloads WHERE identity = ? AND status != 'removed' ORDER BY \
            created_at DESC LIMIT 1
            """,
            [.text(request.identity)])
        return try decode(rows).first
    }

    /// One query per 500 identities instead of one per request: a re-run of a finished list of
    /// ten thousand URLs looks them all up in a few milliseconds.
    public func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord] {
        // Oldest first, so the newest of equal identities wins, as in `record(matching:)`.
        let live = try await records(
            where: "identity", in: Array(Set(requests.map(\.identity))),
            "AND status != 'removed'", order: "ORDER BY created_at ASC")
        return Dictionary(live.map { ($0.request.identity, $0) }, uniquingKeysWith: { _, newer in newer })
    }

    /// The records with `status`, or (nil) every record, removed ones included, in queue order.
    public func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
        let order = QueueOrder.sqlite
        let rows: [SQLiteRow]
        if let status {
            rows = try await read(
                "SELECT \(RecordRow.selectColumns) FROM downloads WHERE status = ? \(order)", [.text(status.rawValue)])
        } else {
            rows = try await read("SELECT \(RecordRow.selectColumns) FROM downloads \(order)")
        }
        return try decode(rows)
    }

    /// A live record other than `id` whose file is `fileName` in `directory`; nil when none is.
    public func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID?
    {
        let rows = try await read(
            """
            SELECT id FROM downloads WHERE directory = ? AND file_name = ? AND id != ? AND status != 'removed' \
            LIMIT 1
            """,
            [.text(directory), .text(fileName), .text(id.rawValue)])
        return rows.first?.column("id")?.string.map(DownloadID.init(rawValue:))
    }

    /// One query per 400 names (a row-value `IN` on the `(directory, file_name)` index).
    public func fileNameHolders(_ names: [FileNamePlace]) async throws -> [FileNamePlace: DownloadID] {
        var holders: [FileNamePlace: DownloadID] = [:]
        let unique = Array(Set(names))
        var start = 0
        while start < unique.count {
            let chunk = unique[start..<min(unique.count, start + 400)]
            start += chunk.count
            let values = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
            let rows = try await read(
                """
                SELECT id, directory, file_name FROM downloads WHERE status != 'removed' AND (directory, \
                file_name) IN (VALUES \(values))
                """,
                chunk.flatMap { [SQLiteData.text($0.directory), .text($0.fileName)] })
            for row in rows {
                guard let id = row.column("id")?.string, let directory = row.column("directory")?.string,
                    let fileName = row.column("file_name")?.string
                else { continue }
                holders[FileNamePlace(directory: directory, fileName: fileName)] = DownloadID(rawValue: id)
            }
        }
        return holders
    }
}
