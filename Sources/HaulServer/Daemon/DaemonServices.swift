import Haul
import HaulCore
import NIOConcurrencyHelpers
import ServiceLifecycle

/// What `haul serve` runs beside its HTTP server, each a `Service` in the daemon's one
/// `ServiceGroup` (`Daemon.buildApplication`): nothing runs as a task of its own.

/// Reads a stream of the manager's to its end (metrics, hooks): the stream ends when the
/// manager shuts down, so it is listed before the manager, and stopped after it. It then waits
/// for its own turn to stop (a service of a group that returns before it is asked to is a
/// failure of the group).
struct ObserverService: Service {
    let observe: @Sendable () async -> Void

    func run() async {
        await observe()
        // Thrown only when cancelled, and then the group is stopping anyway.
        try? await gracefulShutdown()
    }
}

/// The global limit by time of week (`--limit-schedule`): runs until the daemon shuts down.
struct SpeedScheduleService: Service {
    let scheduler: SpeedScheduler

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            await scheduler.run()
        }
    }
}

/// Lets `aria2.shutdown` stop the daemon as SIGTERM would: the service group is created after
/// the routes that need it, so it is handed over once it exists.
final class ShutdownTrigger: Sendable {
    private let group = NIOLockedValueBox<ServiceGroup?>(nil)

    func set(_ serviceGroup: ServiceGroup) {
        group.withLockedValue { $0 = serviceGroup }
    }

    /// Shortly after the answer has gone out.
    func trigger() {
        guard let serviceGroup = group.withLockedValue({ $0 }) else { return }
        Task {
            try? await Task.sleep(for: .milliseconds(100)) // a sleep in a task no one cancels
            await serviceGroup.triggerGracefulShutdown()
        }
    }
}
