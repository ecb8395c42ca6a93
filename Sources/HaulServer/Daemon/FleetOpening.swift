import HaulCore
import Logging
import ServiceLifecycle

/// What opens a fleet's shared queue for `haul serve --store postgres://…`.
///
/// The `haul-fleet` executable passes PostgreSQL's (HaulFleet); `haul` passes none and hands such
/// a command to `haul-fleet` (`FleetExecutable`). That keeps PostgresNIO out of `haul`, and with
/// it all of Foundation: PostgresNIO and its NIOFoundationCompat call Foundation's
/// `JSONSerialization` and `String(format:)`, which link Foundation's internationalization data,
/// 37 MB of a 40 MB budget.
public protocol FleetOpening: Sendable {
    /// Opens the queue at `location` as the fleet host `host`; the daemon's service group runs
    /// what it returns (its pool of connections) and closes it last.
    func open(
        _ location: PostgresLocation, host: String, leaseTimeout: Duration, logger: Logger
    ) async throws -> any FleetQueue
}

/// A fleet's shared queue as the daemon runs it: the store, and a service (its pool).
public protocol FleetQueue: SharedQueueStore, Service {}
