import HaulCore
import HaulStore
import HaulTesting
import Logging
import ServiceLifecycle
import Testing

@testable import Haul

/// The manager as a `Service`: run by a service group, a graceful shutdown stops its runs at a
/// checkpoint and ends its `run()`; queue changes take their turns in the order asked; nothing
/// is taken once it has shut down.
@Suite(.timeLimit(.minutes(1))) struct ManagerServiceTests {
    let payload = Payload(seed: 41, length: 4_000_000)

    @Test func aGracefulShutdownOfItsServiceGroupStopsTheRunsAtACheckpointAndEndsRun() async throws {
        try await withHarness(maxConcurrent: 1, runs: false) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 200_000))
            let group = ServiceGroup(services: [harness.manager], logger: Logger(label: "test"))
            // The group runs it from now on: the adds below wait for it rather than being refused.
            try await harness.manager.prepareToRun()
            let running = Task { try await group.run() }
            let outcomes = harness.manager.outcomes()
            let events = harness.manager.events()
            let slow = try await harness.manager.add(harness.request("/slow", output: "slow.bin"))
            let waiting = try await harness.manager.add(harness.request("/slow?n=2", output: "waiting.bin"))
            await harness.waitForProgress(of: slow.id, beyond: 100_000, in: events)
            await group.triggerGracefulShutdown()
            // run() returns only once the shutdown is done: every outcome is out, the stream ended.
            try await running.value
            var seen: [DownloadID: DownloadStatus] = [:]
            for await outcome in outcomes { seen[outcome.id] = outcome.status }
            #expect(seen == [slow.id: .running, waiting.id: .queued], "left for the next start")
            let stored = try #require(try await harness.store.record(slow.id))
            #expect(stored.status == .running)
            #expect(
                stored.completedLength > 0 && stored.completedLength < payload.length,
                "stopped at a checkpoint: \(stored.completedLength)")
            // Nothing is taken after the shutdown: a change is refused, not left waiting.
            await #expect { try await harness.manager.pause(waiting.id) } throws: {
                ($0 as? HaulError)?.code == .interrupted
            }
            await #expect { try await harness.manager.add(harness.request("/late")) } throws: {
                ($0 as? HaulError)?.code == .interrupted
            }
        }
    }

    /// Queue changes asked while another is being made take their turns in the order they
    /// were asked: a pause, a resume and a pause of one waiting download leave it paused.
    @Test func queueChangesTakeTheirTurnsInTheOrderAsked() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 100_000))
            let (store, manager) = try await harness.countingManager()
            let first = try await manager.add(harness.request("/slow", output: "first.bin"))
            let behind = try await manager.add(harness.request("/slow?n=2", output: "behind.bin"))
            let hold = AsyncHold()
            store.hold = hold
            // An add held in its save keeps the turn; the three changes queue behind it in order.
            let held = Task { try await manager.add(harness.request("/slow?n=3", output: "held.bin")) }
            #expect(await hold.waitForArrivals(1))
            var changes: [Task<Void, any Error>] = []
            for (turn, pause) in [true, false, true].enumerated() {
                changes.append(
                    Task {
                        if pause { try await manager.pause(behind.id) } else { try await manager.resume(behind.id) }
                    })
                #expect(await manager.inboxHolds { $0.waitingTurns == turn + 1 })
            }
            await hold.open()
            _ = try await held.value
            for change in changes { try await change.value }
            #expect(try await harness.store.record(behind.id)?.status == .paused)
            #expect(await manager.queue.state(of: behind.id) == .idle)
            try await manager.pause(first.id)
            await manager.shutdown()
        }
    }
}
