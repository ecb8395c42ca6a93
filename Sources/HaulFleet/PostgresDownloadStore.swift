import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import PostgresNIO
import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The fleet's store: one queue in PostgreSQL that several `haul serve` hosts share, each
/// claiming downloads with leases (see `SharedQueueStore` for the protocol, and
/// docs/ARCHITECTURE.md for why it is safe).
///
/// A row keeps the record as JSON plus the columns the queue is ordered and filtered by; the
/// columns (status, priority, position) win over the JSON when read, so the queue can change a
/// status in SQL alone. Every query has a time limit: a database that does not answer is
/// `storeUnavailable`, never a hang.
///
/// A `Service`: its `run()` runs the pool of connections the queries use (postgres-nio's
/// `PostgresClient.run()`), in the daemon's service group, listed first so that it stops last,
/// after the manager's last saves. A store opened with `runsItsPool` (tests, a library user
/// without a group) runs the pool itself, in a task it ends in `close()`.
public final class PostgresDownloadStore: SharedQueueStore, Service {
    public let host: String
    public let leaseTimeout: Duration
    let client: PostgresClient
    /// The pool's run, when the store runs it itself (`runsItsPool`).
    let runner: Task<Void, Never>?
    let keepsCredentials: Bool
    let logger: Logger
    let queryTimeout: Duration
    /// This host's own connection: the lock on its name, and the commands channel.
    let session: FleetSession
    /// The generation of every lease this host holds.
    let held = NIOLockedValueBox<[DownloadID: Int64]>([:])

    static let columns = "id, status, priority, position, record, credentials"

    private init(
        client: PostgresClient, runner: Task<Void, Never>?, session: FleetSession, host: String,
        leaseTimeout: Duration, keepsCredentials: Bool, logger: Logger
    ) {
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
    /// migrates the schema on a connection of its own, before any pool runs.
    /// - Parameter runsItsPool: false when a service group runs the store (`run()`); its
    ///   queries wait (within their time limits) until the group starts it.
    public static func open(
        _ location: PostgresLocation, host: String, leaseTimeout: Duration = .seconds(15),
        keepsCredentials: Bool = true, runsItsPool: Bool = true, logger: Logger = Logger(label: "haul.fleet")
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
        let session = try await FleetSession.start(
            host: host, connect: { try await connect(location, logger: logger) }, logger: logger)
        do {
            // Creating the tables may wait for another host's migration (the advisory lock).
            try await timed("migrate the schema", limit: .seconds(30)) {
                let connection = try await connect(location, logger: logger)
                do {
                    try await FleetSchema.migrate(connection, logger: logger)
                } catch {
                    await FleetSession.close(connection, logger: logger, after: "a failed migration")
                    throw error
                }
                await FleetSession.close(connection, logger: logger, after: "the migration")
            }
        } catch {
            await session.close()
            throw error
        }
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return PostgresDownloadStore(
            client: client, runner: runsItsPool ? Task { await client.run() } : nil, session: session,
            host: host, leaseTimeout: leaseTimeout, keepsCredentials: keepsCredentials, logger: logger)
    }

    /// Runs the pool until a graceful shutdown (or cancellation) reaches it: for a store opened
    /// with `runsItsPool: false`, in a service group.
    public func run() async {
        guard runner == nil else { return }
        await client.run()
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
                throw HaulError(
                    .storeLogin,
                    "the fleet database \(location) refused the login of \(location.user): \(classified.message)")
            case .storeUnavailable:
                throw HaulError(.storeUnavailable, "cannot reach the fleet database \(location): \(classified.message)")
            default:
                throw HaulError(classified.code, "the fleet database \(location): \(classified.message)")
            }
        }
    }

    public var commandNotices: AsyncStream<Void> { session.notices }

    /// Ends the host's own connection (and its lock on the name), and the pool if the store
    /// runs it itself; a pool run by a service group ends with the group.
    public func close() async {
        await session.close()
        runner?.cancel()
        await runner?.value
    }
}
