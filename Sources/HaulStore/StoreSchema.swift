import HaulCore
import Logging
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
        [
            // Queue order within a priority, so a download can be moved up or down.
            "ALTER TABLE downloads ADD COLUMN position INTEGER NOT NULL DEFAULT 0",
            "UPDATE downloads SET position = created_at * 1000000 + rowid",
            "DROP INDEX downloads_queue",
            "CREATE INDEX downloads_queue ON downloads (status, priority DESC, position)",
            "CREATE INDEX downloads_order ON downloads (priority DESC, position)",
        ],
        [
            // One file over several connections, and a per-download rate limit.
            "ALTER TABLE downloads ADD COLUMN connections INTEGER NOT NULL DEFAULT 1",
            "ALTER TABLE downloads ADD COLUMN max_bytes_per_second INTEGER",
        ],
        [
            // Credentials a resume needs, kept only by stores opened to keep them (the daemon's).
            "ALTER TABLE downloads ADD COLUMN credentials TEXT"
        ],
        [
            // More URLs of the same file (mirrors), one per line.
            "ALTER TABLE downloads ADD COLUMN mirrors TEXT"
        ],
        [
            // The digest the server announced for the whole file (`FIELD ALGORITHM=HEX`), so a
            // resume checks it when the resumed response sends none.
            "ALTER TABLE downloads ADD COLUMN server_digest TEXT"
        ],
        [
            // A Metalink's piece digests (JSON), so a resume still checks them.
            "ALTER TABLE downloads ADD COLUMN piece_hashes TEXT"
        ],
        [
            // The `Cookie` field given for each URL (aria2's `load-cookies` over RPC), one
            // `URL<TAB>FIELD` line per URL: credentials, kept only in the daemon's private state.
            "ALTER TABLE downloads ADD COLUMN cookies TEXT"
        ],
        [
            // Two downloads that may write (queued, running) never share a file name in one
            // directory: the index, not only a check before the write, decides (issue 22). Older
            // databases may hold such pairs already: the later of each (created, then id) is
            // paused, nothing deleted or renamed; resuming it is refused while the other is live.
            """
            UPDATE downloads SET status = 'paused'
            WHERE status IN ('queued', 'running') AND file_name IS NOT NULL AND EXISTS (
                SELECT 1 FROM downloads AS o
                WHERE o.directory = downloads.directory AND o.file_name = downloads.file_name
                    AND o.status IN ('queued', 'running')
                    AND (o.created_at < downloads.created_at OR (o.created_at = downloads.created_at AND o.id < downloads.id)))
            """,
            """
            CREATE UNIQUE INDEX downloads_live_file_name ON downloads (directory, file_name)
            WHERE file_name IS NOT NULL AND status IN ('queued', 'running')
            """,
        ],
        [
            // Headers and credentials in the one form both stores use (HaulCore's
            // `StoredForms.swift`): `[["Name","value"]]` becomes `HTTPHeaderList`'s
            // `{"fields":[{"name":"Name","value":"value"}]}`, `["user","password"]` becomes
            // `{"user":"user","password":"password"}`. A value not in the old form is left as it
            // is, so reading it fails its download with the reason instead of emptying it.
            """
            UPDATE downloads SET headers = json_object('fields', json((
                SELECT json_group_array(json_object('name', json_extract(field.value, '$[0]'), 'value', json_extract(field.value, '$[1]')))
                FROM json_each(downloads.headers) AS field)))
            WHERE json_valid(headers) AND json_type(headers) = 'array' AND NOT EXISTS (
                SELECT 1 FROM json_each(downloads.headers) AS field
                WHERE field.type <> 'array' OR json_array_length(field.value) <> 2
                    OR json_type(field.value, '$[0]') <> 'text' OR json_type(field.value, '$[1]') <> 'text')
            """,
            """
            UPDATE downloads SET credentials = json_object('user', json_extract(credentials, '$[0]'), 'password', json_extract(credentials, '$[1]'))
            WHERE credentials IS NOT NULL AND json_valid(credentials) AND json_type(credentials) = 'array'
                AND json_array_length(credentials) = 2
                AND json_type(credentials, '$[0]') = 'text' AND json_type(credentials, '$[1]') = 'text'
            """,
        ],
        [
            // No connection count named (`haul get` without `-x`): `connections` is where the
            // download starts, and it finds its count from there (`ConnectionGrowth`).
            "ALTER TABLE downloads ADD COLUMN grows_connections INTEGER NOT NULL DEFAULT 0"
        ],
    ]

    /// A step of the schema: statements, or the rewrite of every row in the stored form.
    enum Step {
        case sql([String])
        /// Version 12: each row's 33 columns become the stored form both stores share
        /// (HaulCore's `StoredRecord`: the record's JSON plus the indexed columns), read by the
        /// old reader and written by the new writer, in the migration's transaction.
        case storedForm
    }

    static let steps: [Step] =
        migrations.map(Step.sql) + [
            .storedForm,
            .sql([
                // Version 13: groups of downloads (a name of content and its finish), each one
                // row: the group's JSON, its state and age in columns (`DownloadGroup`).
                """
                CREATE TABLE download_groups (
                    id TEXT PRIMARY KEY, state TEXT NOT NULL, created_at INTEGER NOT NULL, body TEXT NOT NULL)
                """,
                "CREATE INDEX download_groups_unfinished ON download_groups (created_at) WHERE state <> 'finished'",
            ]),
        ]

    /// Two processes may open a new database at once: the version is read inside the write
    /// transaction, so the second one sees the first one's work instead of redoing it.
    /// - Parameter target: the version to bring it to; every step unless a test asks for an
    ///   older schema, to write rows as an older haul did.
    static func migrate(_ store: SQLiteDownloadStore, to target: Int = steps.count) async throws {
        let before = Int(try await store.query("PRAGMA user_version").first?.columns.first?.data.integer ?? 0)
        try refuseNewer(before, path: store.path)
        guard before < target else { return }
        _ = try await store.query("BEGIN IMMEDIATE")
        do {
            let rows = try await store.query("PRAGMA user_version")
            let current = Int(rows.first?.columns.first?.data.integer ?? 0)
            try refuseNewer(current, path: store.path)
            for version in current..<max(current, target) {
                switch steps[version] {
                case .sql(let statements):
                    for statement in statements { _ = try await store.query(statement) }
                case .storedForm:
                    try await rewriteInStoredForm(store)
                }
                _ = try await store.query("PRAGMA user_version = \(version + 1)")
            }
            _ = try await store.query("COMMIT")
        } catch {
            // The migration's own error is the one thrown; a rollback that fails as well is told
            // to the store's logger (SQLite rolls back on its own when the connection closes).
            do {
                _ = try await store.query("ROLLBACK")
            } catch let rollback {
                store.logger.error(
                    "cannot roll back a failed migration of the state database",
                    metadata: [
                        "path": "\(store.path)", "error": "\(error)", "rollback": "\(rollback)",
                    ])
            }
            throw error
        }
    }

    /// A database a newer haul migrated is not this haul's to read or write: its rows may be in
    /// a form this one does not know (schema 12 changed every row's form).
    private static func refuseNewer(_ version: Int, path: String) throws(HaulError) {
        guard version > steps.count else { return }
        throw HaulError(
            .storeTooNew,
            "the state database \(path) has schema version \(version), newer than this haul's "
                + "(\(steps.count)): upgrade haul; nothing was changed")
    }

    /// Every row read by the old reader (`LegacyRecordRow`) from the old table, set aside under
    /// another name, and written in the stored form by the store's own upserts into a new
    /// `downloads`; the old table and its indexes then go, and the new ones are made. The
    /// credentials column is copied as it was (the stored form keeps it apart, in the same JSON),
    /// so one the old reader could not read still fails its download with the reason. A header or
    /// cookie column it could not read has already failed the record, which is stored so, with
    /// the reason.
    private static func rewriteInStoredForm(_ store: SQLiteDownloadStore) async throws {
        _ = try await store.query("ALTER TABLE downloads RENAME TO downloads_schema11")
        _ = try await store.query(
            """
            CREATE TABLE downloads (
                id TEXT PRIMARY KEY NOT NULL,
                identity TEXT NOT NULL,
                status TEXT NOT NULL,
                priority INTEGER NOT NULL,
                position INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                directory TEXT NOT NULL,
                file_name TEXT,
                record TEXT NOT NULL,
                credentials TEXT
            )
            """)
        var rows: [StoredRecord] = []
        for row in try await store.query("SELECT * FROM downloads_schema11") {
            var stored = StoredRecord(try LegacyRecordRow.decode(row), keepCredentials: false)
            stored.credentials = row.column("credentials")?.string
            rows.append(stored)
        }
        for (sql, binds) in RecordRow.upserts(rows) { _ = try await store.query(sql, binds) }
        for statement in [
            "DROP TABLE downloads_schema11",
            "CREATE INDEX downloads_identity ON downloads (identity)",
            "CREATE INDEX downloads_queue ON downloads (status, priority DESC, position)",
            "CREATE INDEX downloads_order ON downloads (priority DESC, position)",
            "CREATE INDEX downloads_file_name ON downloads (directory, file_name)",
            """
            CREATE UNIQUE INDEX downloads_live_file_name ON downloads (directory, file_name)
            WHERE file_name IS NOT NULL AND status IN ('queued', 'running')
            """,
        ] {
            _ = try await store.query(statement)
        }
    }
}
