import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import SQLiteNIO

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The durable `DownloadStore`: one SQLite file in WAL mode with `synchronous=FULL`, so a
/// committed checkpoint survives a crash or power loss (DESIGN rule 2). Writes go through
/// `GroupCommit`: those asked for while a commit runs are committed together in the next
/// transaction, one fsync for many. Reads use a second connection. Several processes may share
/// the file (SQLite locks it, `busy_timeout` waits).
public final class SQLiteDownloadStore: DownloadStore {
    let connection: SQLiteConnection
    let writes: GroupCommit
    private let pool: NIOThreadPool
    /// A second connection, on a thread of its own, for listings: in WAL mode a reader never
    /// waits for a writer, so listing ten thousand downloads does not queue behind the fsyncs of
    /// running downloads' checkpoints (and they do not wait for it).
    private let reader = NIOLockedValueBox<(connection: SQLiteConnection, pool: NIOThreadPool)?>(nil)
    /// The database file's path, as `open` was given it.
    public let path: String
    /// Records parsed from rows whose JSON has not changed since (`StoredRecordCache`); internal
    /// for the reads in `+Reads`.
    let parsed = NIOLockedValueBox(StoredRecordCache())
    /// The owner's logger (the manager's `configuration.logger`): what the store cannot throw
    /// to a caller (a reader that could not be opened or closed, a rollback that failed) is told here.
    let logger: Logger

    private init(
        connection: SQLiteConnection, pool: NIOThreadPool, path: String, keepsCredentials: Bool, logger: Logger
    ) {
        self.connection = connection
        self.writes = GroupCommit(connection: connection, keepCredentials: keepsCredentials, logger: logger)
        self.pool = pool
        self.path = path
        self.logger = logger
    }

    /// Opens or creates the database and brings its schema up to date. With
    /// `keepsCredentials`, requests' credentials are stored too (a daemon resumes after a
    /// restart without being told them again) and the file is made private (0600).
    /// `logger` hears what the store cannot throw, and sqlite-nio's own few messages (a connection
    /// opened, at debug; never a statement or its binds).
    public static func open(
        path: String, keepsCredentials: Bool = false,
        logger: Logger = Logger(label: "haul.store", factory: { _ in SwiftLogNoOpLogHandler() })
    )
        async throws -> SQLiteDownloadStore
    {
        try await open(
            path: path, keepsCredentials: keepsCredentials, logger: logger, schemaVersion: StoreSchema.steps.count)
    }

    /// Opened at an older schema: only for tests that write rows as an older haul did.
    static func open(
        path: String, keepsCredentials: Bool,
        logger: Logger = Logger(label: "haul.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        schemaVersion: Int
    ) async throws -> SQLiteDownloadStore {
        // A thread of its own: a connection waiting on another process's lock must not occupy
        // the threads that file writes (or another connection holding that lock) need.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: pool,
                logger: logger, on: MultiThreadedEventLoopGroup.singleton.any())
        } catch {
            await shutDown(pool, logger: logger, what: "after a failed open")
            throw HaulError(.store, "cannot open the state database \(path)", underlying: error)
        }
        let store = SQLiteDownloadStore(
            connection: connection, pool: pool, path: path, keepsCredentials: keepsCredentials,
            logger: logger)
        // SQLite gives the journal files it makes later the database file's mode.
        if keepsCredentials, chmod(path, 0o600) != 0 {
            let reason = String(cString: strerror(errno))
            await store.closeAfterFailure()
            throw HaulError(.store, "cannot make the state database \(path) private (it keeps credentials): \(reason)")
        }
        var attempt = 0
        while true {
            do {
                try await store.prepare(schemaVersion: schemaVersion)
                await store.openReader()
                logger.debug(
                    "opened the state database",
                    metadata: [
                        "path": "\(path)",
                        "reads":
                            "\(store.reader.withLockedValue { $0 == nil } ? "on the writer's connection" : "on their own connection")",
                    ])
                return store
            } catch let error as SQLiteError
                where [.busy, .locked, .busyTimeout, .busyInRecovery].contains(error.reason)
            {
                // Switching to WAL takes a lock without waiting on busy_timeout; another process
                // opening the same file at this moment is normal, so wait a little and try again.
                attempt += 1
                if attempt == 1 {
                    logger.notice(
                        "the state database is locked by another process; waiting for it",
                        metadata: [
                            "path": "\(path)", "error": "\(error)",
                        ])
                }
                if attempt < 100 {
                    // Nothing lost: a cancelled sleep only makes the next attempt come sooner.
                    try? await Task.sleep(for: .milliseconds(20))
                    continue
                }
                await store.closeAfterFailure()
                throw HaulError(.store, "the state database \(path) stays locked by another process", underlying: error)
            } catch let error as HaulError where error.code == .storeTooNew {
                await store.closeAfterFailure()
                throw error
            } catch {
                await store.closeAfterFailure()
                throw HaulError(.store, "cannot use the state database \(path)", underlying: error)
            }
        }
    }

    /// Closes both connections, in a task of its own: a close must happen even when its caller
    /// was cancelled. (sqlite-nio answers a cancelled task with `CancellationError` without
    /// closing, and the connection then traps in its deinit: the full test suite hung in the
    /// backtracer when a cancelled test's store was closed so.) Reads and writes need no such
    /// task: a cancelled one fails and loses nothing.
    public func close() async throws {
        try await Task { try await self.closeNow() }.value
    }

    private func closeNow() async throws {
        defer { pool.shutdownGracefully { _ in } }
        if let reader = reader.withLockedValue({ value in
            defer { value = nil }
            return value
        }) {
            do {
                try await reader.connection.close()
            } catch {
                logger.warning(
                    "cannot close the state database's reader connection",
                    metadata: [
                        "path": "\(path)", "error": "\(error)",
                    ])
            }
            reader.pool.shutdownGracefully { _ in }
        }
        try await connection.close()
    }

    /// After a failed open, whose own error is the one thrown: a close that fails too is logged.
    private func closeAfterFailure() async {
        do {
            try await close()
        } catch {
            logger.warning(
                "cannot close the state database after a failed open",
                metadata: [
                    "path": "\(path)", "error": "\(error)",
                ])
        }
    }

    private static func shutDown(_ pool: NIOThreadPool, logger: Logger, what: String) async {
        do {
            try await pool.shutdownGracefully()
        } catch {
            logger.warning("cannot stop the state database's thread \(what)", metadata: ["error": "\(error)"])
        }
    }

    /// Without a reader (it could not be opened), reads share the writer's connection: logged,
    /// since listings then wait behind checkpoints' fsyncs.
    private func openReader() async {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        do {
            let connection = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: pool,
                logger: logger, on: MultiThreadedEventLoopGroup.singleton.any())
            _ = try await connection.query("PRAGMA busy_timeout = 10000")
            _ = try await connection.query("PRAGMA query_only = 1")
            reader.withLockedValue { $0 = (connection, pool) }
        } catch {
            logger.warning(
                "cannot open a reader connection to the state database; reads share the writer's",
                metadata: [
                    "path": "\(path)", "error": "\(error)",
                ])
            await Self.shutDown(pool, logger: logger, what: "of the reader")
        }
    }

    /// A read-only statement on the reader connection. Reads come from the tasks that want
    /// their answers: a cancelled one may be refused (sqlite-nio drops queued work of a
    /// cancelled task) and has no use for the rows anyway. Writes never come this way.
    func read(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        guard let connection = reader.withLockedValue({ $0?.connection }) else { return try await query(sql, binds) }
        return try await connection.query(sql, binds)
    }

    /// One statement on the writer's connection, outside the group commit: the schema's
    /// migration while the store opens, and reads when there is no reader.
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await connection.query(sql, binds)
    }

    private func prepare(schemaVersion: Int) async throws {
        _ = try await query("PRAGMA busy_timeout = 10000")
        _ = try await query("PRAGMA journal_mode = WAL")
        _ = try await query("PRAGMA synchronous = FULL")
        try await StoreSchema.migrate(self, to: schemaVersion)
    }

    // MARK: DownloadStore: writes (the reads are in `+Reads`)

    /// Inserts or replaces `record`, committed (and fsynced) before it returns, possibly in one
    /// transaction with other writes asked for meanwhile. A store that keeps no credentials
    /// writes none and leaves those stored before. Throws `fileExists`, changing nothing, when
    /// another live download in its directory already has its file name.
    public func save(_ record: DownloadRecord) async throws {
        try await upsert([record])
    }

    /// Saves many records in one transaction: adding thousands of downloads costs one fsync.
    public func save(_ records: [DownloadRecord]) async throws {
        guard !records.isEmpty else { return }
        try await upsert(records)
    }

    /// A name the unique index on live names keeps for another download is `fileExists`.
    private func upsert(_ records: [DownloadRecord]) async throws {
        do {
            try await writes.perform(.upsert(records))
        } catch let error as SQLiteError where error.message.contains("UNIQUE constraint failed: downloads.directory") {
            throw HaulError(
                .fileExists, "another download in that directory already has that file name; nothing was changed")
        }
    }

    /// Changes only the `priority` and `position` columns of `id`'s row, which win over its
    /// JSON when it is read; nothing happens when there is no such row.
    public func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws {
        try await writes.perform(
            .statement(
                "UPDATE downloads SET priority = ?, position = ? WHERE id = ?",
                [.integer(priority), .integer(SQLiteInt64(position)), .text(id.rawValue)]))
    }

    /// One conditional `UPDATE` under SQLite's write lock: two processes sharing the state
    /// database (two `haul get` in one directory) cannot both take a name. A download not yet
    /// stored only checks.
    public func reserveFileName(_ fileName: String, directory: String, for id: DownloadID) async throws -> Bool {
        let updated = try await writes.perform(
            .statement(
                """
                UPDATE downloads SET file_name = ?1 WHERE id = ?3 AND NOT EXISTS (
                    SELECT 1 FROM downloads AS o WHERE o.directory = ?2 AND o.file_name = ?1 AND o.id != ?3 AND o.status != 'removed')
                RETURNING id
                """, [.text(fileName), .text(directory), .text(id.rawValue)]))
        // The row took it and no other live record has it (once ours, no other can take it):
        // the common case, answered by the write itself.
        if !updated.isEmpty { return true }
        // Not updated: not stored yet (nobody else has it), or another live record has it. Ours
        // if the row has it and no other live record does: one read for both.
        let rows = try await read(
            """
            SELECT EXISTS (SELECT 1 FROM downloads WHERE id = ?3) AS stored,
                (SELECT file_name FROM downloads WHERE id = ?3) AS mine,
                EXISTS (SELECT 1 FROM downloads WHERE directory = ?2 AND file_name = ?1 AND id != ?3
                    AND status != 'removed') AS taken
            """, [.text(fileName), .text(directory), .text(id.rawValue)])
        guard let row = rows.first, row.column("taken")?.integer == 0 else { return false }
        guard row.column("stored")?.integer == 1 else { return true }
        return row.column("mine")?.string == fileName
    }

    /// Deletes `id`'s row through the group commit; nothing happens when there is none.
    public func delete(_ id: DownloadID) async throws {
        try await writes.perform(.statement("DELETE FROM downloads WHERE id = ?", [.text(id.rawValue)]))
    }
}
