import Foundation
import HaulCore
import HaulStore
import HaulTesting
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// aria2's waiting list: queued and paused downloads in the order they would start. A paused
/// download keeps its place and moves like a queued one; any move is one store write; a freed
/// slot goes to the head.
@Suite(.timeLimit(.minutes(3))) struct WaitingListTests {
    let payload = Payload(seed: 41, length: 20_000)

    @Test func pausedDownloadsKeepTheirPlaceAndCanBeMoved() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let running = try await holdTheSlot(harness)
            let ids = try await harness.manager.add(["a", "b", "c", "d"].map { try harness.request("/\($0)") }).map(
                \.id)
            try await harness.manager.pause(ids[1])
            #expect(try await harness.manager.waitingIDs() == ids, "a paused download keeps its place")
            #expect(await harness.manager.queuedIDs == [ids[0], ids[2], ids[3]])

            // A paused download moves by index and by step, like a queued one.
            #expect(try await harness.manager.move(ids[1], toIndex: 3) == 3)
            #expect(try await harness.manager.waitingIDs() == [ids[0], ids[2], ids[3], ids[1]])
            try await harness.manager.move(ids[1], .up)
            #expect(try await harness.manager.waitingIDs() == [ids[0], ids[2], ids[1], ids[3]])
            // A queued one moves past it.
            #expect(try await harness.manager.move(ids[3], toIndex: 0) == 0)
            #expect(try await harness.manager.waitingIDs() == [ids[3], ids[0], ids[2], ids[1]])
            #expect(await harness.manager.queuedIDs == [ids[3], ids[0], ids[2]])
            #expect(try await harness.store.record(ids[1])?.status == .paused, "a move does not resume it")

            // Resumed, it runs from the place it was moved to.
            try await harness.manager.resume(ids[1])
            #expect(await harness.manager.queuedIDs == [ids[3], ids[0], ids[2], ids[1]])
            try await harness.manager.move(ids[1], .top)
            #expect(await harness.manager.queuedIDs == [ids[1], ids[3], ids[0], ids[2]])
            // The store lists them in the same order (what tellWaiting reads after a restart).
            #expect(try await harness.store.ids(status: .queued) == [ids[1], ids[3], ids[0], ids[2]])

            await #expect { try await harness.manager.move(running, toIndex: 0) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }
            try await harness.manager.pause(running)
        }
    }

    /// The paused half of the list is the queue's memory: after a restart the restore lists the
    /// paused downloads at the places they were moved to, among the queued ones, and they move
    /// and stay paused as before.
    @Test func pausedDownloadsKeepTheirPlacesAcrossARestart() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let running = try await holdTheSlot(harness)
            let ids = try await harness.manager.add(["a", "b", "c", "d", "e"].map { try harness.request("/\($0)") })
                .map(\.id)
            try await harness.manager.pause([ids[1], ids[3]])
            try await harness.manager.move(ids[3], toIndex: 0)
            let before = try await harness.manager.waitingIDs()
            #expect(before == [ids[3], ids[0], ids[1], ids[2], ids[4]])
            await harness.manager.shutdown()

            let manager = try await harness.restartedManager()
            try await manager.restore()
            // The run stopped by the shutdown runs again; the list is as it was.
            #expect(await manager.isRunningHere(running))
            #expect(try await manager.waitingIDs() == before)
            #expect(await manager.queuedIDs == [ids[0], ids[2], ids[4]])
            // A paused one moves among them, and stays paused.
            #expect(try await manager.move(ids[1], toIndex: 4) == 4)
            #expect(try await manager.waitingIDs() == [ids[3], ids[0], ids[2], ids[4], ids[1]])
            #expect(try await harness.store.record(ids[1])?.status == .paused)
            // Resumed, it is queued at that place.
            try await manager.resume(ids[3])
            #expect(await manager.queuedIDs == [ids[3], ids[0], ids[2], ids[4]])
            try await manager.pause(running)
            await manager.shutdown()
        }
    }

    /// Ten thousand waiting, some paused, moves by index and by step: each is one write, and the
    /// order is a plain array move's, in memory and in the store.
    @Test func movesAmongTenThousandAreOneWriteEach() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 42, length: 100_000_000), throttle: 20_000))
            let events = manager.events()
            let running = try await manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            let ids = try await manager.add((0..<10_000).map { try harness.request("/q\($0)") }).map(\.id)
            try await manager.pause([ids[10], ids[5_000], ids[9_999]])
            var expected = ids
            #expect(try await manager.waitingIDs() == expected)

            func check(_ id: DownloadID, to target: Int, _ move: () async throws -> Void) async throws {
                store.resetWrites()
                try await move()
                let from = try #require(expected.firstIndex(of: id))
                expected.remove(at: from)
                expected.insert(id, at: target)
                #expect(store.writes(except: running.id) == 1, "one write to move \(id) from \(from) to \(target)")
                let waiting = try await manager.waitingIDs()
                let differs = Array(zip(waiting, expected)).firstIndex { $0 != $1 }
                #expect(
                    differs == nil && waiting.count == expected.count,
                    """
                    after moving \(id) from \(from) to \(target): the list differs from index \(differs ?? -1) of \
                    \(waiting.count)
                    """
                )
            }
            try await check(ids[7_000], to: 5) {
                let at = try await manager.move(ids[7_000], toIndex: 5)
                #expect(at == 5)
            }
            try await check(ids[10], to: 9_000) {
                let at = try await manager.move(ids[10], toIndex: 9_000)
                #expect(at == 9_000)
            }
            try await check(ids[3], to: 0) { try await manager.move(ids[3], .top) }
            try await check(ids[5_000], to: 9_999) { try await manager.move(ids[5_000], .bottom) }
            try await check(ids[42], to: expected.firstIndex(of: ids[42])! - 1) { try await manager.move(ids[42], .up) }
            try await check(ids[9_999], to: expected.firstIndex(of: ids[9_999])! - 1) {
                try await manager.move(ids[9_999], .up)
            }
            let order = try await harness.store.ids(status: nil).filter { $0 != running.id }
            #expect(
                zip(order, expected).allSatisfy { $0 == $1 } && order.count == expected.count,
                "the store's order is the waiting list's")
            try await manager.pause(running.id)
            await manager.shutdown()
        }
    }

    /// Moves to one place again and again (`addUri` at position 5, many times) use up the room
    /// between two neighbours: a few positions around them are spread, not the whole list, so the
    /// writes stay a few per move.
    @Test func repeatedMovesToOnePlaceStayCheap() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 44, length: 100_000_000), throttle: 20_000))
            let events = manager.events()
            let running = try await manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            let ids = try await manager.add((0..<5_000).map { try harness.request("/r\($0)") }).map(\.id)
            var expected = ids
            store.resetWrites()
            for step in 0..<300 {
                // The newest ones, each put at index 5 in turn.
                let id = ids[ids.count - 1 - step]
                #expect(try await manager.move(id, toIndex: 5) == 5)
                expected.removeAll { $0 == id }
                expected.insert(id, at: 5)
            }
            #expect(try await manager.waitingIDs() == expected)
            #expect(try await harness.store.ids(status: .queued) == expected, "the store agrees")
            let writes = store.writes(except: running.id)
            #expect(writes <= 300 * 4, "\(writes) writes for 300 moves")
            try await manager.pause(running.id)
            await manager.shutdown()
        }
    }

    /// After moves and pauses among two priorities, slots free one at a time: each goes to the
    /// head of the waiting list as the store lists it (aria2's tellWaiting), never behind it.
    @Test func aFreedSlotGoesToTheHead() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let running = try await holdTheSlot(harness)
            var requests: [DownloadRequest] = []
            for index in 0..<30 {
                harness.server.setRoute("/h\(index)", Route(payload: payload))
                requests.append(try harness.request("/h\(index)", priority: index % 5 == 0 ? 1 : 0))
            }
            let ids = try await harness.manager.add(requests).map(\.id)
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<40 {
                let id = ids.randomElement(using: &generator)!
                try await harness.manager.move(id, toIndex: Int.random(in: 0..<ids.count, using: &generator))
            }
            let paused = Array(ids.shuffled(using: &generator).prefix(5))
            try await harness.manager.pause(paused)
            for id in paused.prefix(3) {
                try await harness.manager.move(id, toIndex: Int.random(in: 0..<ids.count, using: &generator))
            }
            // What aria2's tellWaiting shows, paused ones left out: the order downloads must start in.
            let expected = try await harness.manager.waitingIDs().filter { !paused.contains($0) }
            #expect(try await harness.store.ids(status: .queued) == expected)

            let events = harness.manager.events()
            let starts = Task {
                var started: [DownloadID] = []
                for await event in events {
                    if case .started = event.kind, event.id != running { started.append(event.id) }
                    if started.count == expected.count { break }
                }
                return started
            }
            try await harness.manager.pause(running)
            #expect(await starts.value == expected)
            await harness.manager.waitUntilIdle()
        }
    }

    /// A download that holds the only slot however slow the machine (100 MB at 20 KB/s).
    private func holdTheSlot(_ harness: Harness) async throws -> DownloadID {
        harness.server.setRoute("/slow", Route(payload: Payload(seed: 43, length: 100_000_000), throttle: 20_000))
        let events = harness.manager.events()
        let running = try await harness.manager.add(harness.request("/slow"))
        await harness.waitForProgress(of: running.id, beyond: 0, in: events)
        return running.id
    }
}

extension Harness {
    /// A second manager on the harness's store, through a `CountingStore`.
    func countingManager() async throws -> (CountingStore, DownloadManager) {
        let store = CountingStore(self.store)
        let manager = DownloadManager(
            configuration: configuration, store: store, transport: transport,
            clock: ClockAdapter(ContinuousClock()))
        return (store, try await manager.started())
    }
}

/// The real SQLite store, noting which records each write changed.
final class CountingStore: DownloadStore, @unchecked Sendable {
    private let base: SQLiteDownloadStore
    private let written = NIOLockedValueBox<[DownloadID]>([])

    init(_ base: SQLiteDownloadStore) { self.base = base }

    /// Records written since the last reset, but for `id`'s (a running download's checkpoints).
    func writes(except id: DownloadID) -> Int { written.withLockedValue { $0.filter { $0 != id }.count } }
    func resetWrites() { written.withLockedValue { $0 = [] } }
    private func wrote(_ ids: [DownloadID]) { written.withLockedValue { $0 += ids } }

    func save(_ record: DownloadRecord) async throws {
        wrote([record.id])
        if let holdOne, holdOne.id == record.id { await holdOne.hold.arrive() }
        try await base.save(record)
        // Stored: the run stays in this save until the hold opens.
        if record.status == .completed { await holdCompleted?.arrive() }
    }

    /// Holds every single save of one download back until opened.
    var holdOne: (id: DownloadID, hold: AsyncHold)?

    /// Holds a run in its save of `completed`, after the store has it.
    var holdCompleted: AsyncHold?

    func save(_ records: [DownloadRecord]) async throws {
        wrote(records.map(\.id))
        batches.withLockedValue { $0.append(records.count) }
        await hold?.arrive()
        try await base.save(records)
    }

    /// The size of every `save([...])` (the manager's batch saves), in order.
    let batches = NIOLockedValueBox<[Int]>([])
    /// Holds batch saves back until opened.
    var hold: AsyncHold?

    /// Every `setPlace` fails, as on a full disk.
    var failsPlaces = false

    func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws {
        if failsPlaces { throw HaulError(.store, "database or disk is full") }
        wrote([id])
        try await base.setPlace(id, priority: priority, position: position)
    }

    func delete(_ id: DownloadID) async throws {
        wrote([id])
        try await base.delete(id)
    }

    /// The id of every `record(_:)` read, in order: a test waits for a read it expects.
    let reads = Watched<[DownloadID]>([])

    func record(_ id: DownloadID) async throws -> DownloadRecord? {
        reads.withLockedValue { $0.append(id) }
        return try await base.record(id)
    }
    func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
        try await base.record(matching: request)
    }
    func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord] {
        try await base.records(matching: requests)
    }
    func records(status: DownloadStatus?) async throws -> [DownloadRecord] { try await base.records(status: status) }
    func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID? {
        try await base.fileNameHolder(fileName, directory: directory, except: id)
    }
    func counts() async throws -> [DownloadStatus: Int] { try await base.counts() }
    func ids(status: DownloadStatus?) async throws -> [DownloadID] { try await base.ids(status: status) }
    func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] { try await base.records(ids) }
}

/// Holds back the tasks that reach it, without blocking a thread, until a test opens it.
actor AsyncHold {
    private var isOpen = false
    private var held: [CheckedContinuation<Void, Never>] = []
    /// How many tasks arrived, held or not; a test waits on it (`waitForArrivals`).
    private nonisolated let arrived = Watched(0)

    var arrivals: Int { arrived.value }

    func arrive() async {
        arrived.withLockedValue { $0 += 1 }
        if isOpen { return }
        await withCheckedContinuation { held.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in held { waiter.resume() }
        held = []
    }

    /// Returns once `count` tasks have arrived (or the waiting task is cancelled): whether
    /// exactly `count` have.
    nonisolated func waitForArrivals(_ count: Int) async -> Bool {
        await arrived.wait { $0 >= count }
        return arrived.value == count
    }
}
