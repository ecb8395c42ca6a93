import HaulCore
import Logging
import PostgresNIO

/// The fleet's tables, created and migrated by haul itself. Every host migrates at start under
/// one advisory lock, so hosts starting together do it once; a schema newer than this haul is
/// refused before anything is changed.
enum FleetSchema {
    /// The version this haul writes. Add a step to `steps` and raise it; never edit a step.
    static let version = 6

    static let steps: [[String]] = [
        [
            """
            CREATE TABLE haul_downloads (
                id text PRIMARY KEY,
                identity text NOT NULL,
                status text NOT NULL,
                priority integer NOT NULL,
                position bigint NOT NULL,
                created_at bigint NOT NULL,
                directory text NOT NULL,
                file_name text,
                record text NOT NULL,
                credentials text,
                lease_owner text,
                lease_generation bigint NOT NULL DEFAULT 0,
                lease_expires timestamptz,
                command text,
                live_completed bigint,
                live_total bigint,
                live_speed double precision,
                live_connections integer
            )
            """,
            """
            CREATE INDEX haul_downloads_claim ON haul_downloads (priority DESC, position) WHERE status IN \
            ('queued', 'running')
            """,
            "CREATE INDEX haul_downloads_order ON haul_downloads (status, priority DESC, position)",
            "CREATE INDEX haul_downloads_identity ON haul_downloads (identity) WHERE status <> 'removed'",
            "CREATE INDEX haul_downloads_name ON haul_downloads (directory, file_name)",
            "CREATE INDEX haul_downloads_owner ON haul_downloads (lease_owner) WHERE lease_owner IS NOT NULL",
        ],
        [
            // Two downloads that may write (queued, running) never share a file name in one
            // directory, whichever hosts claim them (issue 22). The later of each pair an older
            // database holds (created, then id) is paused; nothing is deleted or renamed.
            """
            UPDATE haul_downloads AS d SET status = 'paused', lease_owner = NULL, lease_expires = NULL,
                lease_generation = d.lease_generation + 1, command = NULL
            WHERE d.status IN ('queued', 'running') AND d.file_name IS NOT NULL AND EXISTS (
                SELECT 1 FROM haul_downloads AS o
                WHERE o.directory = d.directory AND o.file_name = d.file_name AND o.status IN ('queued', 'running')
                    AND (o.created_at < d.created_at OR (o.created_at = d.created_at AND o.id < d.id)))
            """,
            """
            CREATE UNIQUE INDEX haul_downloads_live_name ON haul_downloads (directory, file_name)
            WHERE file_name IS NOT NULL AND status IN ('queued', 'running')
            """,
        ],
        [
            // Credentials in the one form both stores use (HaulCore's `StoredForms.swift`):
            // `user:password`, `%` and `:` escaped in each, becomes
            // `{"user":"user","password":"password"}`. A value without the colon is left as it
            // is, so a claim fails its download with the reason instead of running it without.
            // (Headers are in the record's JSON, already in `HTTPHeaderList`'s form.)
            """
            UPDATE haul_downloads SET credentials = json_build_object(
                'user', replace(replace(split_part(credentials, ':', 1), '%3A', ':'), '%25', '%'),
                'password', replace(replace(substr(credentials, strpos(credentials, ':') + 1), '%3A', ':'), '%25', '%'))::text
            WHERE strpos(credentials, ':') > 0
            """
        ],
        [
            // A digest is an identity (issue 34): the digest that names a download's file, as
            // `WaitingQueue.Entry.digest` takes it (a SHA-256 or SHA-512 the request names, a
            // known name, no range), so a claim passes over a download whose twin another host
            // holds or that comes after a twin in the queue (`claim`).
            """
            ALTER TABLE haul_downloads ADD COLUMN IF NOT EXISTS digest text GENERATED ALWAYS AS (
                CASE WHEN (record::jsonb #>> '{request,checksum,algorithm}') IN ('sha-256', 'sha-512')
                    AND (record::jsonb #> '{request,range}') IS NULL AND file_name IS NOT NULL
                THEN (record::jsonb #>> '{request,checksum,algorithm}') || '='
                    || (record::jsonb #>> '{request,checksum,hex}') END) STORED
            """,
            """
            CREATE INDEX IF NOT EXISTS haul_downloads_digest ON haul_downloads (digest)
            WHERE digest IS NOT NULL AND status IN ('queued', 'running')
            """,
        ],
        [
            // Groups of downloads (a name of content and its finish), shared by every host, so
            // whichever completes the last member writes the finish: the group's JSON, its
            // state and age in columns, its members in an array for `groups(containing:)`.
            """
            CREATE TABLE IF NOT EXISTS haul_groups (
                id text PRIMARY KEY, state text NOT NULL, created_at bigint NOT NULL, members text[] NOT NULL,
                body text NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS haul_groups_members ON haul_groups USING gin (members)",
            "CREATE INDEX IF NOT EXISTS haul_groups_unfinished ON haul_groups (created_at) WHERE state <> 'finished'",
        ],
        [
            // Read in order (`--sequential`, issue 49): the record's own setting, in a column a
            // query or an operator can see (`SELECT id FROM haul_downloads WHERE sequential`).
            """
            ALTER TABLE haul_downloads ADD COLUMN IF NOT EXISTS sequential boolean GENERATED ALWAYS AS (
                COALESCE((record::jsonb #>> '{request,sequential}')::boolean, false)) STORED
            """
        ],
    ]

    /// Brings the database to `version`, or refuses one that is newer: on a connection of its
    /// own, in one transaction, so the store's pool need not run yet (the daemon's service group
    /// runs it).
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query("BEGIN", logger: logger)
        do {
            try await bringUpToDate(connection, logger: logger)
            _ = try await connection.query("COMMIT", logger: logger)
        } catch {
            do {
                _ = try await connection.query("ROLLBACK", logger: logger)
            } catch let rollback {
                // The connection is closed next, which rolls back anyway: told, not thrown over
                // the error that matters.
                logger.debug("the fleet schema's rollback failed", metadata: ["error": "\(rollback)"])
            }
            throw error
        }
    }

    private static func bringUpToDate(_ connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query("SELECT pg_advisory_xact_lock(7142007)", logger: logger)
        _ = try await connection.query(
            "CREATE TABLE IF NOT EXISTS haul_schema (version integer NOT NULL)", logger: logger)
        var current = 0
        for try await (value) in try await connection.query("SELECT version FROM haul_schema", logger: logger).decode(
            Int.self)
        {
            current = max(current, value)
        }
        if current > version {
            throw HaulError(
                .storeTooNew,
                """
                the fleet database's schema is version \(current), newer than this haul's (\(version)): upgrade \
                haul; nothing was changed
                """
            )
        }
        guard current < version else { return }
        for step in steps[current..<version] {
            for statement in step {
                _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
        _ = try await connection.query("DELETE FROM haul_schema", logger: logger)
        _ = try await connection.query("INSERT INTO haul_schema (version) VALUES (\(version))", logger: logger)
        logger.info("fleet schema migrated", metadata: ["from": "\(current)", "to": "\(version)"])
    }
}
