import HaulCore
import HaulTesting
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

@testable import Haul

/// What a manager made for itself (its AsyncHTTPClient transport) and what it was handed to own
/// (its store) are released however its task group ends: by its shutdown, or cancelled (a
/// service group cancelled mid-start, or past its graceful shutdown's limit). AsyncHTTPClient's
/// client and sqlite-nio's connection trap in their deinit when they were not shut down.
@Suite(.timeLimit(.minutes(1))) struct ManagerResourcesTests {
    let payload = Payload(seed: 47, length: 4_000_000)

    /// A manager that makes its own transport, on an in-memory store whose close is counted.
    func owningManager(_ harness: Harness, closes: NIOLockedValueBox<Int>) async throws -> DownloadManager {
        try await DownloadManager(
            configuration: harness.configuration, store: InMemoryDownloadStore(),
            closeStore: { closes.withLockedValue { $0 += 1 } })
    }

    /// The service group's task is cancelled while a download runs (its client made): the
    /// manager's `run()` returns with the transport shut down and the store closed, once.
    @Test func aCancelledServiceGroupShutsTheTransportAndTheStoreDown() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 200_000))
            let closes = NIOLockedValueBox(0)
            let manager = try await owningManager(harness, closes: closes)
            let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
            let running = Task { try await group.run() }
            let outcomes = manager.outcomes()
            let events = manager.events()
            let slow = try await manager.add(harness.request("/slow", output: "slow.bin"))
            await harness.waitForProgress(of: slow.id, beyond: 0, in: events)
            running.cancel()
            try await running.value
            #expect(await manager.ownedTransport?.isShutDown == true, "the transport is shut down")
            #expect(closes.withLockedValue { $0 } == 1, "the store is closed")
            var seen: [DownloadID: DownloadStatus] = [:]
            for await outcome in outcomes { seen[outcome.id] = outcome.status }
            #expect(seen[slow.id] != nil, "the cancelled run's outcome is out: \(seen)")
            // A shutdown after it has nothing left to do, and releases nothing twice.
            await manager.shutdown()
            #expect(closes.withLockedValue { $0 } == 1)
        }
    }

    /// A manager that started itself (its first operation came before its service group ran
    /// it) is stopped by the group's cancellation as well: `run()` returns, and what it owns
    /// is released.
    @Test func aSelfStartedManagerIsStoppedByItsCancelledServiceGroup() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 200_000))
            let closes = NIOLockedValueBox(0)
            let manager = try await owningManager(harness, closes: closes)
            let events = manager.events()
            let slow = try await manager.add(harness.request("/slow", output: "slow.bin"))
            await harness.waitForProgress(of: slow.id, beyond: 0, in: events)
            let returned = Watched(false)
            let running = Task {
                await manager.run()
                returned.withLockedValue { $0 = true }
            }
            running.cancel()
            // A hang guard: before, `run()` waited for the manager's own task, which no one stopped.
            // The wait ends with the suite's time limit if it never returns; the test then fails
            // and shuts the manager down itself.
            let ended = await returned.wait { $0 }
            if !ended { await manager.shutdown() }
            #expect(ended, "run() returns once cancelled")
            #expect(await manager.ownedTransport?.isShutDown == true, "the transport is shut down")
            #expect(closes.withLockedValue { $0 } == 1, "the store is closed")
            await #expect { try await manager.add(harness.request("/late")) } throws: {
                ($0 as? HaulError)?.code == .interrupted
            }
        }
    }
}
