import HaulCore
import HaulFleet
import HaulServer
import Logging

/// The daemon's fleet, on HaulFleet's PostgreSQL store; its pool runs in the daemon's service
/// group (first, so it stops last).
struct PostgresFleet: FleetOpening {
    func open(
        _ location: PostgresLocation, host: String, leaseTimeout: Duration, logger: Logger
    ) async throws -> any FleetQueue {
        try await PostgresDownloadStore.open(
            location, host: host, leaseTimeout: leaseTimeout, keepsCredentials: true, runsItsPool: false,
            logger: logger)
    }
}

extension PostgresDownloadStore: FleetQueue {}
