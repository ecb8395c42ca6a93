import Haul
import HaulCore
import Logging
import SQLiteNIO

/// Group commit: every write waits in one line, and whatever waits when the connection comes
/// free is written in one transaction, so sixteen downloads completing at once cost one fsync of
/// the journal, not sixteen. Order is kept: writes run in the order they were asked for, and a
/// caller returns only once its own write is committed (DESIGN rule 2 holds per caller).
final class GroupCommit: Sendable {
    enum Write: Sendable {
        /// Inserts or replaces whole records.
        case upsert([DownloadRecord])
        /// Any other statement (delete, a change of place).
        case statement(String, [SQLiteData])
    }

    /// One line (key 0): every write of the store's one connection; each hears the rows its
    /// statement returned (`RETURNING`; none for an upsert).
    private let line: BatchLine<Int, Write, [SQLiteRow]>

    init(connection: SQLiteConnection, keepCredentials: Bool, logger: Logger) {
        line = BatchLine(
            failure: .eachAlone(onSplit: { count, error in
                // One refused write (a name the unique index keeps for another download) must not
                // fail the others with it: each is tried alone, and hears its own answer.
                logger.debug(
                    "a batch of writes failed; each is written alone",
                    metadata: ["writes": "\(count)", "error": "\(error)"])
            })
        ) { _, writes in
            try await Self.commit(writes, connection: connection, keepCredentials: keepCredentials, logger: logger)
        }
    }

    /// Returns once `write` is committed, with the rows its statement returned; throws if its
    /// transaction failed.
    @discardableResult
    func perform(_ write: Write) async throws -> [SQLiteRow] {
        try await line.submit(write, to: 0)
    }

    /// One statement runs alone (it is atomic by itself); more run in one transaction. Returns
    /// each write's rows, in order.
    private static func commit(_ writes: [Write], connection: SQLiteConnection, keepCredentials: Bool, logger: Logger)
        async throws -> [[SQLiteRow]]
    {
        let statements = Self.statements(for: writes, keepCredentials: keepCredentials)
        var rows = writes.map { _ in [SQLiteRow]() }
        if statements.isEmpty { return rows }
        if statements.count == 1 {
            let answer = try await connection.query(statements[0].sql, statements[0].binds)
            if let write = statements[0].write { rows[write] = answer }
            return rows
        }
        _ = try await connection.query("BEGIN IMMEDIATE")
        do {
            for statement in statements {
                let answer = try await connection.query(statement.sql, statement.binds)
                if let write = statement.write { rows[write] = answer }
            }
            _ = try await connection.query("COMMIT")
            return rows
        } catch {
            // The statement's own error is the one thrown; a rollback that fails as well is told
            // here (SQLite rolls back on its own when the connection closes).
            do {
                _ = try await connection.query("ROLLBACK")
            } catch let rollback {
                logger.error(
                    "cannot roll back a failed write to the state database",
                    metadata: [
                        "error": "\(error)", "rollback": "\(rollback)",
                    ])
            }
            throw error
        }
    }

    /// The writes as statements, in order: consecutive upserts merge into as few multi-row
    /// statements as SQLite's bind limit allows, with the newest version of each record. A
    /// statement of its own names its write (`write`), which hears its rows.
    private static func statements(for writes: [Write], keepCredentials: Bool) -> [(
        sql: String, binds: [SQLiteData], write: Int?
    )] {
        var statements: [(sql: String, binds: [SQLiteData], write: Int?)] = []
        var records: [DownloadRecord] = []
        func flush() {
            // A record saved twice in one batch: its later version wins, as it would one at a time.
            var latest: [DownloadID: Int] = [:]
            for (index, record) in records.enumerated() { latest[record.id] = index }
            // `keepCredentials` false writes NULL, which leaves those stored before alone.
            let unique = records.indices.filter { latest[records[$0].id] == $0 }
                .map { StoredRecord(records[$0], keepCredentials: keepCredentials) }
            statements += RecordRow.upserts(unique).map { ($0.sql, $0.binds, nil) }
            records = []
        }
        for (index, write) in writes.enumerated() {
            switch write {
            case .upsert(let more):
                records += more
            case .statement(let sql, let binds):
                flush()
                statements.append((sql, binds, index))
            }
        }
        flush()
        return statements
    }
}
