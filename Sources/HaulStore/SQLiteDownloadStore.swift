import Foundation
import HaulCore
import Logging
import SQLiteNIO

/// The durable `DownloadStore`: one SQLite file in WAL mode with `synchronous=FULL`, so a
/// committed checkpoint survives a crash or power loss (DESIGN rule 2). Every save is a single
/// statement, hence atomic without explicit transactions; several processes may share the file
/// (SQLite locks it, `busy_timeout` waits).
public final class SQLiteDownloadStore: DownloadStore {
    let connection: SQLiteConnection
    public let path: String

    private init(connection: SQLiteConnection, path: String) {
        self.connection = connection
        self.path = path
    }

    /// Opens or creates the database and brings its schema up to date.
    public static func open(path: String) async throws -> SQLiteDownloadStore {
        var logger = Logger(label: "haul.store")
        logger.logLevel = .error
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        } catch {
            throw HaulError(.store, "cannot open the state database \(path)", cause: "\(error)")
        }
        let store = SQLiteDownloadStore(connection: connection, path: path)
        do {
            try await store.prepare()
        } catch {
            try? await connection.close()
            throw HaulError(.store, "cannot use the state database \(path)", cause: "\(error)")
        }
        return store
    }

    public func close() async throws {
        try await connection.close()
    }

    /// Runs one statement in a task of its own: a checkpoint saved by a download whose task was
    /// just cancelled (pause, shutdown) must still be committed, and sqlite-nio would drop work
    /// submitted from a cancelled task.
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        let connection = self.connection
        return try await Task { try await connection.query(sql, binds) }.value
    }

    private func prepare() async throws {
        _ = try await query("PRAGMA busy_timeout = 10000")
        _ = try await query("PRAGMA journal_mode = WAL")
        _ = try await query("PRAGMA synchronous = FULL")
        try await StoreSchema.migrate(connection)
    }

    // MARK: DownloadStore

    public func save(_ record: DownloadRecord) async throws {
        let row = RecordRow(record)
        _ = try await query(RecordRow.upsertSQL, row.binds)
    }

    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        let rows = try await query("SELECT * FROM downloads WHERE id = ?", [.text(id.rawValue)])
        return try rows.first.map(RecordRow.decode)
    }

    public func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        let rows = try await query(
            "SELECT * FROM downloads WHERE identity = ? AND status != 'removed' ORDER BY created_at DESC LIMIT 1",
            [.text(request.identity)])
        return try rows.first.map(RecordRow.decode)
    }

    public func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
        let order = "ORDER BY priority DESC, created_at ASC, rowid ASC"
        let rows: [SQLiteRow]
        if let status {
            rows = try await query("SELECT * FROM downloads WHERE status = ? \(order)", [.text(status.rawValue)])
        } else {
            rows = try await query("SELECT * FROM downloads \(order)")
        }
        return try rows.map(RecordRow.decode)
    }

    public func isFileNameTaken(_ fileName: String, directory: String, except id: DownloadID) async throws -> Bool {
        let rows = try await query(
            "SELECT 1 FROM downloads WHERE directory = ? AND file_name = ? AND id != ? AND status != 'removed' LIMIT 1",
            [.text(directory), .text(fileName), .text(id.rawValue)])
        return !rows.isEmpty
    }

    public func delete(_ id: DownloadID) async throws {
        _ = try await query("DELETE FROM downloads WHERE id = ?", [.text(id.rawValue)])
    }
}
