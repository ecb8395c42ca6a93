import AsyncHTTPClient
import Foundation
import HaulCore
import HaulStore
import HaulTesting
import NIOCore
import Testing

@testable import Haul

/// Limit 2: a slow download and the ring's run, whose body waits until the test's own
/// request to its path arrives (so the test says when it ends), and one download behind them.
struct Ring {
    var slow: DownloadRecord, ring: DownloadRecord, behind: DownloadRecord

    static func start(_ harness: Harness, _ manager: DownloadManager) async throws -> Ring {
        harness.server.setRoute("/slow", Route(payload: Payload(seed: 43, length: 100_000_000), throttle: 20_000))
        harness.server.setRoute(
            "/ring",
            Route(
                payload: Payload(seed: 44, length: 64_000),
                bodyGate: BodyGate(requests: 2, atMost: .seconds(60))))
        harness.server.setRoute("/behind", Route(payload: Payload(seed: 45, length: 1_000)))
        let slow = try await manager.add(harness.request("/slow"))
        let ring = try await manager.add(harness.request("/ring"))
        #expect(await harness.server.wait { $0.requests(to: "/ring").count == 1 })
        let behind = try await manager.add(harness.request("/behind"))
        #expect(await manager.queuedIDs == [behind.id])
        return Ring(slow: slow, ring: ring, behind: behind)
    }

    /// Lets the ring's download end while the manager's loop is busy with an add (held in its
    /// save): returns once the run has returned and its end waits in the loop's inbox, behind
    /// the add, to free its slot.
    func endBehindTheAdd(_ harness: Harness, _ manager: DownloadManager) async throws {
        let release = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: harness.server.url("/ring")), timeout: .seconds(60))
        _ = try await release.body.collect(upTo: 1 << 20)
        #expect(await manager.inboxHolds { $0.waitingRunEnds == 1 })
    }
}

/// Issue 30: a freed slot goes to the head of the waiting list as it stands at that moment. An
/// add at position 0 takes its place in the add's own step, before its record is saved: a run
/// that ends while the save is under way (its end waits in the manager's inbox behind the add)
/// leaves its slot to it, not to the download behind it.
@Suite(.timeLimit(.minutes(2))) struct QueueHeadTests {
    @Test func aSlotFreedWhileAnAddAtPositionZeroIsSavedGoesToIt() async throws {
        try await withHarness(maxConcurrent: 2) { harness in
            let (store, manager) = try await harness.countingManager()
            harness.server.setRoute("/next", Route(payload: Payload(seed: 46, length: 1_000)))
            let ring = try await Ring.start(harness, manager)
            let (slow, behind) = (ring.slow, ring.behind)

            // The add at position 0 is held in its save; the ring's download ends meanwhile.
            let hold = AsyncHold()
            store.hold = hold
            let next = Task { try await manager.add([harness.request("/next")], placements: [AddPlacement(index: 0)]) }
            #expect(await hold.waitForArrivals(1))
            try await ring.endBehindTheAdd(harness, manager)

            // The slot waits for the add being saved: the download behind it has not started.
            #expect(await manager.isRunningHere(behind.id) == false)
            #expect(harness.server.requests(to: "/behind").isEmpty)
            await hold.open()
            let added = try #require(try await next.value.first)
            #expect(try await manager.outcome(of: added.id).status == .completed)
            #expect(try await manager.outcome(of: behind.id).status == .completed)
            // The slot went to the head, the add at position 0: its request came first (the one
            // behind it may start once the add's bytes are in, while it is published).
            let order = harness.server.responses.map(\.path).filter { $0 == "/next" || $0 == "/behind" }
            #expect(order == ["/next", "/behind"], "the slot went to the head, the add at position 0")
            try await manager.pause(slow.id)
            await manager.shutdown()
        }
    }

    /// An `addUri` with `pause` is saved paused and never starts, even with slots free: no
    /// request reaches the server (it used to start, then be paused).
    @Test func anAddThatStartsPausedSendsNoRequest() async throws {
        try await withHarness(maxConcurrent: 3) { harness in
            harness.server.setRoute("/paused", Route(payload: Payload(seed: 47, length: 10_000)))
            let requests = try (0..<20).map { try harness.request("/paused?n=\($0)", output: "p\($0).bin") }
            let records = try await harness.manager.add(
                requests, placements: requests.map { _ in AddPlacement(startsPaused: true) })
            #expect(records.allSatisfy { $0.status == .paused })
            #expect(try await harness.store.records(status: .paused).count == 20)
            #expect(await harness.manager.queuedIDs.isEmpty)
            // A download added after them without pause runs: the server has seen only it.
            harness.server.setRoute("/after", Route(payload: Payload(seed: 48, length: 10_000)))
            let after = try await harness.manager.add(harness.request("/after"))
            #expect(try await harness.manager.outcome(of: after.id).status == .completed)
            #expect(harness.server.requests(to: "/paused").isEmpty)
            // Resumed, they keep the order they were added in.
            try await harness.manager.resume(records.map(\.id))
            for record in records { #expect(try await harness.manager.outcome(of: record.id).status == .completed) }
        }
    }

    /// A download that exists and is not scheduled (failed) added again at position 0 takes its
    /// place before its record is saved, as a new one does: a slot freed during that save waits
    /// for it instead of going to the download behind.
    @Test func aSlotFreedWhileAnExistingDownloadIsReaddedAtPositionZeroGoesToIt() async throws {
        try await withHarness(maxConcurrent: 2) { harness in
            let (store, manager) = try await harness.countingManager()
            let failed = try await manager.add(harness.request("/missing"))
            #expect(try await manager.outcome(of: failed.id).status == .failed)
            let ring = try await Ring.start(harness, manager)
            let (slow, behind) = (ring.slow, ring.behind)

            // The re-add at position 0 is held in its save; the ring's download ends meanwhile.
            let hold = AsyncHold()
            store.holdOne = (failed.id, hold)
            let again = Task {
                try await manager.add([harness.request("/missing")], placements: [AddPlacement(index: 0)])
            }
            #expect(await hold.waitForArrivals(1))
            try await ring.endBehindTheAdd(harness, manager)
            #expect(await manager.isRunningHere(behind.id) == false)
            #expect(harness.server.requests(to: "/behind").isEmpty, "the slot waited for the re-add being saved")
            store.holdOne = nil
            await hold.open()
            #expect(try await again.value.map(\.id) == [failed.id])
            #expect(try await manager.outcome(of: behind.id).status == .completed)
            let order = harness.server.requests.map(\.path).filter { $0 == "/missing" || $0 == "/behind" }
            #expect(
                order == ["/missing", "/missing", "/behind"], "the slot went to the head, the re-add at position 0")
            try await manager.pause(slow.id)
            await manager.shutdown()
        }
    }

    /// A download that exists (failed, or completed with its file gone) added again with `pause`
    /// is saved paused in the add's own step: no request reaches the server (it used to be
    /// queued, started by a free slot, then paused).
    @Test func anExistingDownloadAddedAgainPausedSendsNoRequest() async throws {
        try await withHarness(maxConcurrent: 3) { harness in
            let failed = try await harness.manager.add(harness.request("/missing"))
            #expect(try await harness.manager.outcome(of: failed.id).status == .failed)
            let donePayload = Payload(seed: 49, length: 10_000)
            harness.server.setRoute("/done", Route(payload: donePayload))
            let done = try await harness.manager.add(harness.request("/done"))
            let completed = try #require(try await harness.manager.outcome(of: done.id).record)
            #expect(completed.status == .completed)
            try FileManager.default.removeItem(atPath: try #require(DestinationFiles.finalPath(completed)))
            let asked = (harness.server.requests(to: "/missing").count, harness.server.requests(to: "/done").count)

            let again = try await harness.manager.add(
                [harness.request("/missing"), harness.request("/done")],
                placements: [AddPlacement(startsPaused: true), AddPlacement(startsPaused: true)])
            #expect(again.map(\.id) == [failed.id, done.id])
            #expect(again.allSatisfy { $0.status == .paused })
            #expect(
                try await harness.store.records(status: .paused).map(\.id).sorted { $0.rawValue < $1.rawValue }
                    == [failed.id, done.id].sorted { $0.rawValue < $1.rawValue })
            #expect(await harness.manager.queuedIDs.isEmpty)
            #expect(await harness.manager.isRunningHere(failed.id) == false)
            #expect(await harness.manager.isRunningHere(done.id) == false)
            #expect(
                (harness.server.requests(to: "/missing").count, harness.server.requests(to: "/done").count) == asked)
            // Resumed, the one whose file went missing fetches it again.
            try await harness.manager.resume(done.id)
            let fetched = try #require(try await harness.manager.outcome(of: done.id).record)
            #expect(fetched.status == .completed)
            #expect(donePayload.mismatch(inFileAt: try #require(DestinationFiles.finalPath(fetched))) == nil)
        }
    }

    /// Adds at indices of the waiting list land there (the waiting list as aria2 shows it, paused
    /// downloads included), in the batch's order, spreading positions where neighbours are
    /// adjacent.
    @Test func addsAtIndicesLandThere() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 43, length: 100_000_000), throttle: 20_000))
            let slow = try await harness.manager.add(harness.request("/slow"))
            #expect(await harness.server.wait { $0.requests(to: "/slow").count == 1 })
            var expected = try await harness.manager.add((0..<6).map { try harness.request("/w\($0)") }).map(\.id)
            try await harness.manager.pause(expected[4])
            // Moves to index 0 give adjacent positions; the add at 1 between them needs a spread.
            try await harness.manager.move(expected[3], toIndex: 0)
            expected.insert(expected.remove(at: 3), at: 0)
            try await harness.manager.move(expected[5], toIndex: 0)
            expected.insert(expected.remove(at: 5), at: 0)
            #expect(try await harness.manager.waitingIDs() == expected)
            let adds = try (0..<4).map { try harness.request("/n\($0)") }
            let indices = [1, 0, 7, 100]
            let added = try await harness.manager.add(adds, placements: indices.map { AddPlacement(index: $0) }).map(
                \.id)
            for (id, index) in zip(added, indices) { expected.insert(id, at: min(index, expected.count)) }
            #expect(try await harness.manager.waitingIDs() == expected)
            #expect(
                try await harness.store.ids(status: nil).filter { $0 != slow.id } == expected,
                "the store keeps the same order")
            try await harness.manager.pause(slow.id)
        }
    }

    /// A move takes effect in the waiting list before it is stored; when the store refuses it,
    /// the list goes back to what it was, a spread's neighbours included.
    @Test func aMoveTheStoreRefusesIsUndone() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 43, length: 100_000_000), throttle: 20_000))
            let slow = try await manager.add(harness.request("/slow"))
            #expect(await harness.server.wait { $0.requests(to: "/slow").count == 1 })
            var order = try await manager.add((0..<8).map { try harness.request("/w\($0)") }).map(\.id)
            // Two moves to the front leave adjacent positions there: a move between them spreads.
            for _ in 0..<2 {
                try await manager.move(order[7], toIndex: 0)
                order.insert(order.removeLast(), at: 0)
            }
            #expect(await manager.queuedIDs == order)
            store.failsPlaces = true
            for (from, to) in [(5, 1), (6, 0), (0, 7)] {
                await #expect(throws: HaulError.self) { try await manager.move(order[from], toIndex: to) }
                #expect(await manager.queuedIDs == order, "\(from) to \(to) was undone")
            }
            // Memory holds the places the store holds, not the spread's that never reached it.
            let inMemory = await manager.queue.waiting.entries.map { [$0.id.rawValue: $0.position] }
            let stored = try await harness.store.records(status: .queued).map { [$0.id.rawValue: $0.position] }
            #expect(inMemory == stored)
            store.failsPlaces = false
            #expect(try await manager.waitingIDs() == order)
            #expect(try await harness.store.ids(status: .queued) == order, "the store kept the order too")
            try await manager.pause(slow.id)
            await manager.shutdown()
        }
    }

    /// The same download twice in a batch, the second paused (a multicall of two `addUri`): it
    /// ends paused, as the calls one after another would leave it. Added paused again, a paused
    /// download stays paused and sends no request.
    @Test func aPausedAddOfTheSameDownloadPausesIt() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 43, length: 100_000_000), throttle: 20_000))
            harness.server.setRoute("/x", Route(payload: Payload(seed: 49, length: 10_000)))
            let slow = try await harness.manager.add(harness.request("/slow"))
            #expect(await harness.server.wait { $0.requests(to: "/slow").count == 1 })
            let request = try harness.request("/x")
            let records = try await harness.manager.add(
                [request, request], placements: [AddPlacement(), AddPlacement(startsPaused: true)])
            #expect(records[0].id == records[1].id)
            #expect(try await harness.manager.download(records[0].id).status == .paused)
            #expect(await harness.manager.queuedIDs.isEmpty)
            try await harness.manager.pause(slow.id)
            let again = try await harness.manager.add([request], placements: [AddPlacement(startsPaused: true)])
            #expect(again[0].id == records[0].id)
            #expect(try await harness.manager.download(records[0].id).status == .paused)
            #expect(harness.server.requests(to: "/x").isEmpty)
        }
    }

    /// aria2's `removeDownloadResult` sent as soon as `tellStatus` says `complete`: the run has
    /// stored its end but not returned yet. The result is forgotten once the run returns, not
    /// refused as a download still scheduled (it failed one control-bench run in ten).
    @Test func aResultIsForgottenWhileItsRunReturns() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            harness.server.setRoute("/f", Route(payload: Payload(seed: 50, length: 10_000)))
            let hold = AsyncHold()
            store.holdCompleted = hold
            let record = try await manager.add(harness.request("/f"))
            #expect(await hold.waitForArrivals(1))
            #expect(try await harness.store.record(record.id)?.status == .completed)
            #expect(await manager.isRunningHere(record.id))
            let readsBefore = store.reads.value.filter { $0 == record.id }.count
            let forgetting = Task { try await manager.forget(record.id) }
            // The forget reads the record once it has found the run still there: from then on it
            // waits for the run to return.
            #expect(await store.reads.wait { $0.filter { $0 == record.id }.count > readsBefore })
            #expect(await manager.isRunningHere(record.id))
            await hold.open()
            try await forgetting.value
            #expect(try await harness.store.record(record.id) == nil)
            await manager.shutdown()
        }
    }
}
