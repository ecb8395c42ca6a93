import SQLiteNIO

/// The schema as an ordered list of migrations; `PRAGMA user_version` records how many ran.
/// Add a migration to the end, never edit one that shipped.
enum StoreSchema {
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE downloads (
                id TEXT PRIMARY KEY NOT NULL,
                identity TEXT NOT NULL,
                url TEXT NOT NULL,
                directory TEXT NOT NULL,
                requested_name TEXT,
                range_start INTEGER,
                range_end INTEGER,
                checksum TEXT,
                headers TEXT NOT NULL,
                max_attempts INTEGER,
                priority INTEGER NOT NULL DEFAULT 0,
                status TEXT NOT NULL,
                file_name TEXT,
                final_url TEXT,
                etag TEXT,
                last_modified TEXT,
                total_length INTEGER,
                segments TEXT NOT NULL,
                completed_length INTEGER NOT NULL,
                error_code TEXT,
                error_message TEXT,
                error_http_status INTEGER,
                error_cause TEXT,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )
            """,
            "CREATE INDEX downloads_identity ON downloads (identity)",
            "CREATE INDEX downloads_queue ON downloads (status, priority DESC, created_at)",
            "CREATE INDEX downloads_file_name ON downloads (directory, file_name)",
        ],
    ]

    static func migrate(_ connection: SQLiteConnection) async throws {
        let rows = try await connection.query("PRAGMA user_version")
        let current = rows.first?.columns.first?.data.integer ?? 0
        guard current < migrations.count else { return }
        for version in Int(current)..<migrations.count {
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                for statement in migrations[version] { _ = try await connection.query(statement) }
                _ = try await connection.query("PRAGMA user_version = \(version + 1)")
                _ = try await connection.query("COMMIT")
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        }
    }
}
