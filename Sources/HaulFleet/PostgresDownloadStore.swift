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
}
