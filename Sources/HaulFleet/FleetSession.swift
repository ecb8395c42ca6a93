import HaulCore
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// This host's own connection to the fleet's database, kept for the life of the process, beside
/// the pool the queries use. It does two things no pooled connection can:
/// - It holds a session advisory lock on the host's name (`--fleet-name`). A second live
///   `haul serve` given the same name is refused at start (`fleet-name-in-use`), so leases held
///   under a name while its lock is held here are this process's: a host restarted under its
///   old name takes them back at once (`claim`), its old process being gone (PostgreSQL ends a
///   dead client's session, and its lock with it).
/// - It listens on `haul_commands`, where a host that leaves a command (pause, remove) on a row
///   another host holds notifies that host by name: the holder renews (and so hears the
///   command) at once instead of at its next renewal. The renewal stays the fallback, so a lost
///   notification delays a command, never loses it.
///
/// When the connection drops it is made again (every second), the lock taken again and the
/// listening resumed; each new connection is one notice too, since commands may have come
/// meanwhile.
final class FleetSession: Sendable {
    static let channel = "haul_commands"
    /// The first key of the name locks (the second is the name's hash): distinct from the
    /// schema's migration lock.
    static let lockSpace: Int32 = 7_142_008

    let host: String
    /// One element whenever a command for this host may be waiting.
    let notices: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let connection: NIOLockedValueBox<PostgresConnection?>
    private let loop = NIOLockedValueBox<Task<Void, Never>?>(nil)
    private let logger: Logger

    private init(host: String, connection: PostgresConnection, logger: Logger) {
        self.host = host
        self.logger = logger
        self.connection = NIOLockedValueBox(connection)
        (notices, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Connects, takes the name's lock (refusing a name a live process holds) and starts listening.
    static func start(
        host: String, connect: @escaping @Sendable () async throws -> PostgresConnection,
        logger: Logger
    ) async throws -> FleetSession {
        let first = try await connect()
        do {
            // A process that just died may still have its session for a moment (the server
            // ends it once it reads the closed socket): a restart right after is not refused.
            var locked = try await lock(host, on: first, logger: logger)
            for _ in 0..<20 where !locked {
                try await Task.sleep(for: .milliseconds(100))
                locked = try await lock(host, on: first, logger: logger)
            }
            guard locked else {
                throw HaulError(
                    .fleetNameInUse,
                    """
                    another live haul serve is already host '\(host)' of this fleet: give this one another \
                    --fleet-name
                    """
                )
            }
        } catch {
            await close(first, logger: logger, after: "a failed start")
            throw PostgresDownloadStore.classify(error)
        }
        let session = FleetSession(host: host, connection: first, logger: logger)
        session.loop.withLockedValue {
            $0 = Task { await session.listen(first: first, connect: connect, logger: logger) }
        }
        return session
    }

    static func lock(_ host: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT pg_try_advisory_lock(\(lockSpace), hashtext(\(host)))", logger: logger)
        for try await locked in rows.decode(Bool.self) { return locked }
        return false
    }

    private func listen(
        first: PostgresConnection, connect: @escaping @Sendable () async throws -> PostgresConnection,
        logger: Logger
    ) async {
        var current: PostgresConnection? = first
        while !Task.isCancelled {
            if let connection = current {
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        // Commands left while this host was not listening.
                        continuation.yield()
                        for try await notification in notifications where notification.payload == host {
                            continuation.yield()
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        logger.warning(
                            "the fleet's command channel dropped; reconnecting", metadata: ["error": "\(error)"])
                    }
                }
                await Self.close(connection, logger: logger, after: "the channel dropped")
                current = nil
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: .seconds(1)) // cancelled only when the session closes
            do {
                let connection = try await connect()
                if try await !Self.lock(host, on: connection, logger: logger) {
                    logger.error(
                        "another process took this host's fleet name while its connection was down",
                        metadata: ["host": "\(host)"])
                }
                self.connection.withLockedValue { $0 = connection }
                current = connection
            } catch {
                logger.warning("cannot reconnect the fleet's command channel", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Stops listening and closes the connection, which ends the lock.
    func close() async {
        let task = loop.withLockedValue { $0 }
        task?.cancel()
        if let connection = connection.withLockedValue({ $0 }) {
            await Self.close(connection, logger: logger, after: "the host stopped")
        }
        await task?.value
        continuation.finish()
    }

    /// A close whose failure changes nothing (the server ends the session, and the name's lock
    /// with it, when the socket goes) but is still told, at debug level: a dropped connection
    /// usually refuses its close.
    static func close(_ connection: PostgresConnection, logger: Logger, after: String) async {
        do {
            try await connection.close()
        } catch {
            logger.debug("cannot close a fleet connection after \(after)", metadata: ["error": "\(error)"])
        }
    }
}
