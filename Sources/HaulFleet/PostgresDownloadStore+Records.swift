import HaulCore
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The `DownloadStore` side: fenced saves of held records, all-or-nothing saves of the rest,
/// and reads in queue order (`QueueOrder.postgres`).
extension PostgresDownloadStore {
    public func save(_ record: DownloadRecord) async throws {
        guard let generation = held.withLockedValue({ $0[record.id] }) else {
            try await save([record])
            return
        }
        let fields = StoredRecord(record, keepCredentials: keepsCredentials)
        let query: PostgresQuery = """
            UPDATE haul_downloads SET identity = \(fields.identity), status = \(fields.status), priority = \(fields.priority),
                position = \(fields.position), directory = \(fields.directory), file_name = \(fields.fileName),
                record = \(fields.record), credentials = COALESCE(\(fields.credentials), credentials),
                lease_expires = now() + make_interval(secs => \(leaseSeconds))
            WHERE id = \(fields.id) AND lease_owner = \(host) AND lease_generation = \(generation)
            RETURNING id
            """
        let updated = try await returnedIDs(query, "save a checkpoint")
        if updated.isEmpty {
            held.withLockedValue { held in if held[record.id] == generation { held[record.id] = nil } }
            throw HaulError(.leaseLost, "another host took download \(record.id) over")
        }
    }

    /// Records nobody here holds: new ones are inserted; existing ones change only while no live
    /// lease holds them (and any lease they had is ended, its generation passed). All of them or
    /// none, in one transaction: a batch resume with one download running elsewhere changes nothing.
    public func save(_ records: [DownloadRecord]) async throws {
        var unheld: [DownloadRecord] = []
        for record in records {
            if held.withLockedValue({ $0[record.id] }) != nil { try await save(record) } else { unheld.append(record) }
        }
        guard !unheld.isEmpty else { return }
        var statements: [(query: PostgresQuery, ids: [DownloadID])] = []
        for start in stride(from: 0, to: unheld.count, by: 500) {
            let batch = Array(unheld[start..<min(start + 500, unheld.count)])
            var binds = PostgresBindings()
            var rows: [String] = []
            for record in batch {
                let fields = StoredRecord(record, keepCredentials: keepsCredentials)
                let first = binds.count
                fields.bind(into: &binds)
                rows.append(
                    "(" + (1...StoredRecord.columns.count).map { "$\(first + $0)" }.joined(separator: ", ") + ")")
            }
            let sql = """
                INSERT INTO haul_downloads (\(StoredRecord.columns.joined(separator: ", ")))
                VALUES \(rows.joined(separator: ", "))
                ON CONFLICT (id) DO UPDATE SET identity = excluded.identity, status = excluded.status,
                    priority = excluded.priority, position = excluded.position, directory = excluded.directory,
                    file_name = excluded.file_name, record = excluded.record,
                    credentials = COALESCE(excluded.credentials, haul_downloads.credentials),
                    lease_owner = NULL, lease_expires = NULL, lease_generation = haul_downloads.lease_generation + 1,
                    command = NULL, live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL
                WHERE haul_downloads.lease_owner IS NULL OR haul_downloads.lease_expires < now()
                RETURNING id
                """
            statements.append((PostgresQuery(unsafeSQL: sql, binds: binds), batch.map(\.id)))
        }
        let work = statements
        try await timed("save downloads", limit: queryTimeout * statements.count) { [client, logger] in
            try await client.withTransaction(logger: logger) { connection in
                for (query, ids) in work {
                    var written: Set<String> = []
                    for try await id in try await connection.query(query, logger: logger).decode(String.self) {
                        written.insert(id)
                    }
                    if let refused = ids.first(where: { !written.contains($0.rawValue) }) {
                        throw HaulError(
                            .conflict, "download \(refused) is running on another host; nothing was changed")
                    }
                }
            }
        }
    }

    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        try await records("SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE id = \(id.rawValue)").first
    }

    public func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        try await records(
            """
            SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE identity = \(request.identity) AND status <> 'removed'
            ORDER BY created_at DESC LIMIT 1
            """
        ).first
    }

    public func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord] {
        var found: [String: DownloadRecord] = [:]
        let identities = Array(Set(requests.map(\.identity)))
        for start in stride(from: 0, to: identities.count, by: 500) {
            let page = Array(identities[start..<min(start + 500, identities.count)])
            // Oldest first: the newest of several live records for one identity wins.
            for record in try await records(
                """
                SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE identity = ANY(\(page)::text[]) AND status <> 'removed'
                ORDER BY created_at ASC
                """)
            {
                found[record.request.identity] = record
            }
        }
        return found
    }

    public func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
        if let status {
            return try await records(
                """
                SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE status = \(status.rawValue) \(unescaped: QueueOrder.postgres)
                """)
        }
        return try await records(
            "SELECT \(unescaped: Self.columns) FROM haul_downloads \(unescaped: QueueOrder.postgres)")
    }

    public func delete(_ id: DownloadID) async throws {
        try await execute("DELETE FROM haul_downloads WHERE id = \(id.rawValue)", "delete a download")
    }

    public func counts() async throws -> [DownloadStatus: Int] {
        let query: PostgresQuery = "SELECT status, count(*) FROM haul_downloads GROUP BY status"
        let rows = try await fetchRows(query, "count downloads", as: (String, Int).self)
        var counts: [DownloadStatus: Int] = [:]
        for (status, count) in rows { if let status = DownloadStatus(rawValue: status) { counts[status] = count } }
        return counts
    }

    public func ids(status: DownloadStatus?) async throws -> [DownloadID] {
        let query: PostgresQuery =
            status.map {
                "SELECT id FROM haul_downloads WHERE status = \($0.rawValue) \(unescaped: QueueOrder.postgres)"
            } ?? "SELECT id FROM haul_downloads WHERE status <> 'removed' \(unescaped: QueueOrder.postgres)"
        return try await returnedIDs(query, "list downloads").map(DownloadID.init(rawValue:))
    }

    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        var found: [DownloadRecord] = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let page = ids[start..<min(start + 500, ids.count)].map(\.rawValue)
            found += try await records(
                "SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE id = ANY(\(page)::text[])")
        }
        return found
    }

    public func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws {
        try await execute(
            "UPDATE haul_downloads SET priority = \(priority), position = \(position) WHERE id = \(id.rawValue)",
            "move a download")
    }
}
