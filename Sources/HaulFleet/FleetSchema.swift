import HaulCore
import Logging
import PostgresNIO

/// The fleet's tables, created and migrated by haul itself. Every host migrates at start under
/// one advisory lock, so hosts starting together do it once; a schema newer than this haul is
/// refused before anything is changed.
enum FleetSchema {
    /// The version this haul writes. Add a step to `steps` and raise it; never edit a step.
    static let version = 1

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
            "CREATE INDEX haul_downloads_claim ON haul_downloads (priority DESC, position) WHERE status IN ('queued', 'running')",
            "CREATE INDEX haul_downloads_order ON haul_downloads (status, priority DESC, position)",
            "CREATE INDEX haul_downloads_identity ON haul_downloads (identity) WHERE status <> 'removed'",
            "CREATE INDEX haul_downloads_name ON haul_downloads (directory, file_name)",
            "CREATE INDEX haul_downloads_owner ON haul_downloads (lease_owner) WHERE lease_owner IS NOT NULL",
        ],
    ]

    /// Brings the database to `version`, or refuses one that is newer.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(7142007)", logger: logger)
            _ = try await connection.query("CREATE TABLE IF NOT EXISTS haul_schema (version integer NOT NULL)", logger: logger)
            var current = 0
            for try await (value) in try await connection.query("SELECT version FROM haul_schema", logger: logger).decode(Int.self) {
                current = max(current, value)
            }
            if current > version {
                throw HaulError(.storeTooNew, "the fleet database's schema is version \(current), newer than this haul's (\(version)): upgrade haul; nothing was changed")
            }
            guard current < version else { return }
            for step in steps[current..<version] {
                for statement in step { _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            }
            _ = try await connection.query("DELETE FROM haul_schema", logger: logger)
            _ = try await connection.query("INSERT INTO haul_schema (version) VALUES (\(version))", logger: logger)
            logger.info("fleet schema migrated", metadata: ["from": "\(current)", "to": "\(version)"])
        }
    }
}
