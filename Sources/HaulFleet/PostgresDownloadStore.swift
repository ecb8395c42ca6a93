import Foundation
import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import PostgresNIO

/// The fleet's store: one queue in PostgreSQL that several `haul serve` hosts share, each
/// claiming downloads with leases (see `SharedQueueStore` for the protocol, and
/// docs/ARCHITECTURE.md for why it is safe).
///
/// A row keeps the record as JSON plus the columns the queue is ordered and filtered by; the
/// columns (status, priority, position) win over the JSON when read, so the queue can change a
/// status in SQL alone. Every query has a time limit: a database that does not answer is
/// `storeUnavailable`, never a hang.
public final class PostgresDownloadStore: SharedQueueStore {
    public let host: String
    public let leaseTimeout: Duration
    let client: PostgresClient
    let runner: Task<Void, Never>
    let keepsCredentials: Bool
    let logger: Logger
    let queryTimeout: Duration
    /// This host's own connection: the lock on its name, and the commands channel.
    let session: FleetSession
    /// The generation of every lease this host holds.
    let held = NIOLockedValueBox<[DownloadID: Int64]>([:])

    static let columns = "id, status, priority, position, record, credentials"

    private init(client: PostgresClient, runner: Task<Void, Never>, session: FleetSession, host: String,
                 leaseTimeout: Duration, keepsCredentials: Bool, logger: Logger) {
        self.client = client
        self.session = session
        self.runner = runner
        self.host = host
        self.leaseTimeout = leaseTimeout
        self.keepsCredentials = keepsCredentials
        self.logger = logger
        // A third of the lease (1 to 5 s): a host whose queries hang still stops before it expires.
        self.queryTimeout = min(.seconds(5), max(.seconds(1), leaseTimeout / 3))
    }

    /// Connects (this host's own connection first, so a refused login or an unreachable server
    /// is one clear error, and a name another live host uses is refused), then creates or
    /// migrates the schema.
    public static func open(
        _ location: PostgresLocation, host: String, leaseTimeout: Duration = .seconds(15),
        keepsCredentials: Bool = true, logger: Logger = Logger(label: "haul.fleet")
    ) async throws -> PostgresDownloadStore {
        let tls: PostgresClient.Configuration.TLS
        switch location.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = 8
        let session = try await FleetSession.start(host: host, connect: { try await connect(location, logger: logger) }, logger: logger)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        let store = PostgresDownloadStore(client: client, runner: runner, session: session, host: host, leaseTimeout: leaseTimeout,
                                          keepsCredentials: keepsCredentials, logger: logger)
        do {
            // Creating the tables may wait for another host's migration (the advisory lock).
            try await store.timed("migrate the schema", limit: .seconds(30)) { try await FleetSchema.migrate(client, logger: logger) }
        } catch {
            await store.close()
            throw error
        }
        return store
    }

    /// One connection of its own, every failure as one clear error.
    static func connect(_ location: PostgresLocation, logger: Logger) async throws -> PostgresConnection {
        let tls: PostgresConnection.Configuration.TLS
        switch location.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var options = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: tls)
        options.options.connectTimeout = .seconds(5)
        do {
            return try await PostgresConnection.connect(configuration: options, id: 0, logger: logger)
        } catch {
            let classified = classify(error)
            switch classified.code {
            case .storeLogin:
                throw HaulError(.storeLogin, "the fleet database \(location) refused the login of \(location.user): \(classified.message)")
            case .storeUnavailable:
                throw HaulError(.storeUnavailable, "cannot reach the fleet database \(location): \(classified.message)")
            default:
                throw HaulError(classified.code, "the fleet database \(location): \(classified.message)")
            }
        }
    }

    public var commandNotices: AsyncStream<Void> { session.notices }

    public func close() async {
        await session.close()
        runner.cancel()
        await runner.value
    }

    // MARK: Leases

    public func holds(_ id: DownloadID) -> Bool {
        held.withLockedValue { $0[id] != nil }
    }

    public func claim(limit: Int, excluding excluded: [DownloadID]) async throws -> [DownloadRecord] {
        guard limit > 0 else { return [] }
        // A lease under this host's name that this process does not hold is its previous
        // process's (the name's lock proves that one is gone): taken back at once.
        let mine = Array(Set(excluded.map(\.rawValue) + held.withLockedValue { $0.keys.map(\.rawValue) }))
        let query: PostgresQuery = """
            WITH next AS (
                SELECT id FROM haul_downloads
                WHERE status IN ('queued', 'running')
                    AND (lease_owner IS NULL OR lease_expires < now() OR lease_owner = \(host))
                    AND id <> ALL(\(mine)::text[])
                \(unescaped: QueueOrder.postgres)
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE haul_downloads AS d SET lease_owner = \(host), lease_generation = d.lease_generation + 1,
                lease_expires = now() + make_interval(secs => \(leaseSeconds)),
                live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL
            FROM next WHERE d.id = next.id
            RETURNING d.id, d.status, d.priority, d.position, d.record, d.credentials, d.lease_generation
            """
        let rows = try await fetchRows(query, "claim", as: (String, String, Int, Int64, String, String?, Int64).self)
        var claimed: [DownloadRecord] = []
        for row in rows {
            let record = try Self.decode((row.0, row.1, row.2, row.3, row.4, row.5))
            held.withLockedValue { $0[record.id] = row.6 }
            claimed.append(record)
        }
        return claimed.sorted { $0.runsBefore($1) }
    }

    public func renew(_ progress: [DownloadID: HaulCore.Progress?]) async throws -> LeaseReport {
        let leases = held.withLockedValue { $0 }
        guard !leases.isEmpty else { return LeaseReport() }
        var ids: [String] = [], generations: [Int64] = [], completed: [Int64] = [], totals: [Int64] = []
        var speeds: [Double] = [], connections: [Int32] = []
        for (id, generation) in leases {
            let live = progress[id] ?? nil
            ids.append(id.rawValue)
            generations.append(generation)
            completed.append(live?.completed ?? -1)
            totals.append(live?.total ?? -1)
            speeds.append(live?.bytesPerSecond ?? 0)
            connections.append(Int32(live?.connections ?? 0))
        }
        let query: PostgresQuery = """
            UPDATE haul_downloads AS d SET lease_expires = now() + make_interval(secs => \(leaseSeconds)),
                live_completed = NULLIF(u.completed, -1), live_total = NULLIF(u.total, -1),
                live_speed = u.speed, live_connections = u.connections
            FROM unnest(\(ids)::text[], \(generations)::int8[], \(completed)::int8[], \(totals)::int8[], \(speeds)::float8[], \(connections)::int4[])
                AS u(id, generation, completed, total, speed, connections)
            WHERE d.id = u.id AND d.lease_owner = \(host) AND d.lease_generation = u.generation
            RETURNING d.id, d.command
            """
        let rows = try await fetchRows(query, "renew leases", as: (String, String?).self)
        var report = LeaseReport()
        let renewed = Set(rows.map { DownloadID(rawValue: $0.0) })
        for (id, command) in rows {
            if let command, let parsed = FleetCommand(rawValue: command) { report.commands[DownloadID(rawValue: id)] = parsed }
        }
        held.withLockedValue { held in
            // Lost: still held here with the generation this renewal tried. A lease released
            // while the renewal ran (its run ended) is not lost, and a claim made meanwhile
            // keeps its own generation.
            for (id, generation) in leases where !renewed.contains(id) && held[id] == generation {
                held[id] = nil
                report.lost.insert(id)
            }
        }
        return report
    }

    public func release(_ id: DownloadID) async throws {
        guard let generation = held.withLockedValue({ $0.removeValue(forKey: id) }) else { return }
        let query: PostgresQuery = """
            UPDATE haul_downloads SET lease_owner = NULL, lease_expires = NULL, command = NULL,
                live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL
            WHERE id = \(id.rawValue) AND lease_owner = \(host) AND lease_generation = \(generation)
            """
        try await execute(query, "release a lease")
    }

    public func runs(_ ids: [DownloadID]) async throws -> [DownloadID: FleetRun] {
        guard !ids.isEmpty else { return [:] }
        let query: PostgresQuery = """
            SELECT id, lease_owner, live_completed, live_total, live_speed, live_connections FROM haul_downloads
            WHERE id = ANY(\(ids.map(\.rawValue))::text[]) AND lease_owner IS NOT NULL AND lease_expires > now()
            """
        let rows = try await fetchRows(query, "read the fleet's runs", as: (String, String, Int64?, Int64?, Double?, Int?).self)
        var runs: [DownloadID: FleetRun] = [:]
        for (id, owner, completed, total, speed, connections) in rows {
            let progress = completed.map { HaulCore.Progress(completed: $0, total: total, bytesPerSecond: speed ?? 0, connections: connections ?? 0) }
            runs[DownloadID(rawValue: id)] = FleetRun(host: owner, progress: progress)
        }
        return runs
    }

    var leaseSeconds: Double { leaseTimeout.seconds }

    // MARK: DownloadStore

    public func save(_ record: DownloadRecord) async throws {
        guard let generation = held.withLockedValue({ $0[record.id] }) else {
            try await save([record])
            return
        }
        let fields = try Fields(record, keepCredentials: keepsCredentials)
        let query: PostgresQuery = """
            UPDATE haul_downloads SET identity = \(fields.identity), status = \(fields.status), priority = \(fields.priority),
                position = \(fields.position), directory = \(fields.directory), file_name = \(fields.fileName),
                record = \(fields.json), credentials = COALESCE(\(fields.credentials), credentials),
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
                let fields = try Fields(record, keepCredentials: keepsCredentials)
                let first = binds.count
                fields.bind(into: &binds)
                rows.append("(" + (1...Fields.count).map { "$\(first + $0)" }.joined(separator: ", ") + ")")
            }
            let sql = """
                INSERT INTO haul_downloads (id, identity, status, priority, position, created_at, directory, file_name, record, credentials)
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
                    for try await id in try await connection.query(query, logger: logger).decode(String.self) { written.insert(id) }
                    if let refused = ids.first(where: { !written.contains($0.rawValue) }) {
                        throw HaulError(.conflict, "download \(refused) is running on another host; nothing was changed")
                    }
                }
            }
        }
    }

    public func record(_ id: DownloadID) async throws -> DownloadRecord? {
        try await records("SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE id = \(id.rawValue)").first
    }

    public func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        try await records("""
            SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE identity = \(request.identity) AND status <> 'removed'
            ORDER BY created_at DESC LIMIT 1
            """).first
    }

    public func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord] {
        var found: [String: DownloadRecord] = [:]
        let identities = Array(Set(requests.map(\.identity)))
        for start in stride(from: 0, to: identities.count, by: 500) {
            let page = Array(identities[start..<min(start + 500, identities.count)])
            // Oldest first: the newest of several live records for one identity wins.
            for record in try await records("""
                SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE identity = ANY(\(page)::text[]) AND status <> 'removed'
                ORDER BY created_at ASC
                """) {
                found[record.request.identity] = record
            }
        }
        return found
    }

    public func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
        if let status {
            return try await records("""
                SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE status = \(status.rawValue) \(unescaped: QueueOrder.postgres)
                """)
        }
        return try await records("SELECT \(unescaped: Self.columns) FROM haul_downloads \(unescaped: QueueOrder.postgres)")
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
        let query: PostgresQuery = status.map {
            "SELECT id FROM haul_downloads WHERE status = \($0.rawValue) \(unescaped: QueueOrder.postgres)"
        } ?? "SELECT id FROM haul_downloads WHERE status <> 'removed' \(unescaped: QueueOrder.postgres)"
        return try await returnedIDs(query, "list downloads").map(DownloadID.init(rawValue:))
    }

    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        var found: [DownloadRecord] = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let page = ids[start..<min(start + 500, ids.count)].map(\.rawValue)
            found += try await records("SELECT \(unescaped: Self.columns) FROM haul_downloads WHERE id = ANY(\(page)::text[])")
        }
        return found
    }

    public func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws {
        try await execute("UPDATE haul_downloads SET priority = \(priority), position = \(position) WHERE id = \(id.rawValue)", "move a download")
    }

    // MARK: Queries

    func records(_ query: PostgresQuery) async throws -> [DownloadRecord] {
        let rows = try await fetchRows(query, "read downloads", as: (String, String, Int, Int64, String, String?).self)
        return try rows.map(Self.decode)
    }

    /// Every row `query` returns, decoded as `columns`, within the time limit.
    func fetchRows<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, _ what: String, as columns: (repeat each Column).Type
    ) async throws -> [(repeat each Column)] {
        try await timed(what) { [client, logger] in
            var rows: [(repeat each Column)] = []
            for try await row in try await client.query(query, logger: logger).decode(columns) { rows.append(row) }
            return rows
        }
    }

    func returnedIDs(_ query: PostgresQuery, _ what: String) async throws -> [String] {
        try await fetchRows(query, what, as: String.self)
    }

    func execute(_ query: PostgresQuery, _ what: String) async throws {
        try await timed(what) { [client, logger] in _ = try await client.query(query, logger: logger) }
    }

    /// Runs `body` within the query time limit; every failure comes out as a `HaulError`.
    func timed<T: Sendable>(_ what: String, limit: Duration? = nil, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let limit = limit ?? queryTimeout
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw HaulError(.storeUnavailable, "the fleet database did not answer within \(limit) (\(what))")
                }
                return value
            }
        } catch {
            throw Self.classify(error)
        }
    }

    static func decode(_ row: (String, String, Int, Int64, String, String?)) throws -> DownloadRecord {
        var record: DownloadRecord
        do {
            record = try JSONDecoder().decode(DownloadRecord.self, from: Data(row.4.utf8))
        } catch {
            throw HaulError(.store, "unreadable download \(row.0) in the fleet database: \(error)")
        }
        guard let status = DownloadStatus(rawValue: row.1) else { throw HaulError(.store, "download \(row.0) has an unknown status \(row.1)") }
        record.status = status
        record.request.priority = row.2
        record.position = row.3
        record.request.credentials = row.5.flatMap(Credentials.init(storedForm:))
        return record
    }

    /// Any error from PostgresNIO, the pool or a time limit as the `HaulError` the engine acts on.
    static func classify(_ error: any Error) -> HaulError {
        if let error = error as? HaulError { return error }
        if let error = error as? PostgresTransactionError {
            return classify(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? HaulError(.store, "\(error)"))
        }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "\(error)"
                if state == "28P01" || state == "28000" { return HaulError(.storeLogin, message) }
                if state.hasPrefix("08") || state.hasPrefix("57P") { return HaulError(.storeUnavailable, message) }
                if state == "23505", error.serverInfo?[.constraintName] == "haul_downloads_live_name" {
                    return HaulError(.fileExists, "another download in that directory already has that file name; nothing was changed")
                }
                return HaulError(.store, message + (state.isEmpty ? "" : " (\(state))"))
            case .authMechanismRequiresPassword:
                return HaulError(.storeLogin, "the server wants a password and the URL has none")
            case .unsupportedAuthMechanism, .saslError:
                return HaulError(.storeLogin, "authentication failed: \(error.underlying.map { "\($0)" } ?? "\(error.code)")")
            case .sslUnsupported:
                return HaulError(.storeUnavailable, "the server does not support TLS (add ?sslmode=disable)")
            default:
                return HaulError(.storeUnavailable, error.underlying.map { "\($0)" } ?? "\(error.code)")
            }
        }
        if error is CancellationError { return HaulError(.interrupted, "cancelled") }
        return HaulError(.storeUnavailable, "\(error)")
    }
}

/// One record's columns.
struct Fields {
    static let count = 10
    let id: String, identity: String, status: String, priority: Int, position: Int64, createdAt: Int64
    let directory: String, fileName: String?, json: String, credentials: String?

    init(_ record: DownloadRecord, keepCredentials: Bool) throws {
        id = record.id.rawValue
        identity = record.request.identity
        status = record.status.rawValue
        priority = record.request.priority
        position = record.position
        createdAt = record.createdAt
        directory = record.request.directory
        fileName = record.fileName
        json = String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
        credentials = keepCredentials ? record.request.credentials?.storedForm : nil
    }

    func bind(into binds: inout PostgresBindings) {
        binds.append(id)
        binds.append(identity)
        binds.append(status)
        binds.append(priority)
        binds.append(position)
        binds.append(createdAt)
        binds.append(directory)
        if let fileName { binds.append(fileName) } else { binds.appendNull() }
        binds.append(json)
        if let credentials { binds.append(credentials) } else { binds.appendNull() }
    }
}
