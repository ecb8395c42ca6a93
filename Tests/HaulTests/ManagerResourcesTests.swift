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
            try await manager.prepareToRun()
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

    /// A manager nobody runs starts nothing: an operation says so (not a wait for ever), and a
    /// shutdown still releases what it owns.
    @Test func aManagerNobodyRunsRefusesOperationsWithAClearError() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let closes = NIOLockedValueBox(0)
            let manager = try await owningManager(harness, closes: closes)
            await #expect {
                try await manager.add(harness.request("/never"))
            } throws: { error in
                let error = error as? HaulError
                return error?.code == .usage && error?.message.contains("withManager") == true
            }
            #expect(try await manager.store.records(status: nil).isEmpty, "nothing was added")
            await manager.shutdown()
            #expect(await manager.ownedTransport?.isShutDown == true, "the transport is shut down")
            #expect(closes.withLockedValue { $0 } == 1, "the store is closed")
        }
    }

    /// `withRunning` runs the manager for its body and shuts it down after, even when the body
    /// throws: the run it started is stopped as running (for the next start), and what it owns
    /// is released.
    @Test func withRunningShutsTheManagerDownWhenItsBodyThrows() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 200_000))
            let closes = NIOLockedValueBox(0)
            let manager = try await owningManager(harness, closes: closes)
            struct Stop: Error {}
            let outcomes = manager.outcomes()
            var added: DownloadID?
            await #expect(throws: Stop.self) {
                try await manager.withRunning { manager in
                    let events = manager.events()
                    let slow = try await manager.add(harness.request("/slow", output: "slow.bin"))
                    added = slow.id
                    await harness.waitForProgress(of: slow.id, beyond: 0, in: events)
                    throw Stop()
                }
            }
            var seen: [DownloadID: DownloadStatus] = [:]
            for await outcome in outcomes { seen[outcome.id] = outcome.status }
            #expect(added.map { seen[$0] } == .running, "stopped as running: \(seen)")
            #expect(await manager.ownedTransport?.isShutDown == true, "the transport is shut down")
            #expect(closes.withLockedValue { $0 } == 1, "the store is closed")
            await #expect { try await manager.add(harness.request("/late")) } throws: {
                ($0 as? HaulError)?.code == .interrupted
            }
        }
    }
}
