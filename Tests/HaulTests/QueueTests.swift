import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// The queue operations the daemon needs: batches, order, moves, pause/resume all, the summary.
@Suite(.timeLimit(.minutes(2))) struct QueueTests {
    let payload = Payload(seed: 31, length: 400_000)

    @Test func batchAddSavesAllDeduplicatesAndKeepsOrder() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // Stalls after 100 KB: it is still running however slowly the test goes.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
            for index in 0..<5 { harness.server.setRoute("/f\(index)", Route(payload: payload)) }
            let events = harness.manager.events()
            let first = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: first.id, beyond: 0, in: events)
            var requests = try (0..<5).map { try harness.request("/f\($0)") }
            requests.append(requests[2]) // the same download twice in one batch
            let records = try await harness.manager.add(requests)
            #expect(records.count == 6)
            #expect(records[5].id == records[2].id)
            #expect(Set(records.map(\.id)).count == 5)
            // Saved, queued, in the order given: a fresh store sees the same.
            let queued = try await harness.store.records(status: .queued).map(\.id)
            #expect(queued == records.prefix(5).map(\.id))
            // Adding the batch again starts nothing new.
            let again = try await harness.manager.add(requests)
            #expect(again.map(\.id) == records.map(\.id))
            #expect(try await harness.store.records(status: nil).count == 6)
            let counts = try await harness.manager.summary().counts
            #expect(counts[.queued] == 5 && counts[.running] == 1)
            try await harness.manager.pause(first.id)
        }
    }

    @Test func movesReorderTheQueueAndSurviveInTheStore() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // Stalls after 100 KB: it is still running however slowly the test goes.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            var ids: [DownloadID] = []
            for name in ["a", "b", "c", "d"] {
                ids.append(try await harness.manager.add(harness.request("/\(name)")).id)
            }
            func order() async throws -> [DownloadID] { try await harness.store.records(status: .queued).map(\.id) }

            try await harness.manager.move(ids[3], .up)
            #expect(try await order() == [ids[0], ids[1], ids[3], ids[2]])
            try await harness.manager.move(ids[0], .down)
            #expect(try await order() == [ids[1], ids[0], ids[3], ids[2]])
            try await harness.manager.move(ids[2], .top)
            #expect(try await order() == [ids[2], ids[1], ids[0], ids[3]])
            try await harness.manager.move(ids[2], .bottom)
            #expect(try await order() == [ids[1], ids[0], ids[3], ids[2]])
            try await harness.manager.move(ids[1], .up) // already first: nothing changes
            #expect(try await order() == [ids[1], ids[0], ids[3], ids[2]])

            // Across priorities: moving up past a higher-priority one takes its priority.
            let urgent = try await harness.manager.add(harness.request("/urgent", priority: 5))
            #expect(try await order().first == urgent.id)
            let moved = try await harness.manager.move(ids[1], .up)
            #expect(moved.request.priority == 5)
            #expect(try await order() == [ids[1], urgent.id, ids[0], ids[3], ids[2]])

            await #expect(throws: HaulError.self) { try await harness.manager.move(running.id, .up) }
            try await harness.manager.pause(running.id)
        }
    }

    @Test func pauseAllAndResumeAllKeepTheOrder() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // Stalls after 100 KB: it is still running however slowly the test goes.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            let queued = try await harness.manager.add(
                ["a", "b", "c"].map { try harness.request("/\($0)", priority: 0) })
            #expect(try await harness.manager.pauseAll() == 4)
            _ = try await harness.waitForEnd(of: running.id, in: events)
            #expect(try await harness.store.records(status: .paused).count == 4)
            #expect(try await harness.manager.summary().counts[.queued] == nil)

            // Resume all: back in the queue in their old order, the interrupted one first.
            // Stalls after 100 KB: it is still running however slowly the test goes.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
            let resumed = try await harness.manager.resumeAll()
            #expect(resumed == 4)
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            #expect(try await harness.store.records(status: .queued).map(\.id) == queued.map(\.id))
            try await harness.manager.pause(running.id)
        }
    }

    @Test func aBatchPauseOrResumeChangesAllOrNothing() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 20_000))
            let done = try await harness.download(harness.request("/file"))
            #expect(done.final.isCompleted)
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            let queued = try await harness.manager.add(harness.request("/queued"))

            // One finished download in the batch: nothing changes, not even the queued one.
            await #expect { try await harness.manager.pause([queued.id, running.id, done.record.id]) } throws: {
                ($0 as? HaulError)?.code == .conflict
                    && ($0 as? HaulError)?.message.contains("nothing was changed") == true
            }
            #expect(try await harness.store.record(queued.id)?.status == .queued)
            #expect(try await harness.store.record(running.id)?.status == .running)

            #expect(try await harness.manager.pause([queued.id, running.id]) == 2)
            #expect(try await harness.store.record(queued.id)?.status == .paused)
            #expect(try await harness.store.record(running.id)?.status == .paused)
            await #expect { try await harness.manager.resume([queued.id, done.record.id]) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }
            #expect(try await harness.store.record(queued.id)?.status == .paused)
            await #expect {
                try await harness.manager.resume([queued.id, DownloadID(rawValue: "0000000000000000")])
            } throws: {
                ($0 as? HaulError)?.code == .notFound
            }
            #expect(try await harness.store.record(queued.id)?.status == .paused)
        }
    }

    /// Moves to an index put the download exactly there, among mixed priorities, in memory and
    /// in the store's order alike, whatever the distance (one write when its neighbours leave
    /// room between them, as downloads added a microsecond or more apart do).
    @Test func movesToAnIndexMatchAPlainArrayMove() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // Holds the one slot for the whole test, however slow the machine (at 20 KB/s, 100 MB
            // take more than an hour): nothing queued starts while the moves are checked.
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 33, length: 100_000_000), throttle: 20_000))
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            var requests: [DownloadRequest] = []
            for index in 0..<60 { requests.append(try harness.request("/q\(index)", priority: index % 7 == 0 ? 1 : 0)) }
            _ = try await harness.manager.add(requests)
            var expected = await harness.manager.queuedIDs
            var generator = SystemRandomNumberGenerator()
            for step in 0..<80 {
                let from = Int.random(in: 0..<expected.count, using: &generator)
                let to = Int.random(in: 0..<expected.count, using: &generator)
                let id = expected[from]
                #expect(try await harness.manager.move(id, toIndex: to) == to, "step \(step): \(from) -> \(to)")
                expected.remove(at: from)
                expected.insert(id, at: to)
                #expect(await harness.manager.queuedIDs == expected, "step \(step): \(from) -> \(to)")
            }
            // The store orders them the same way (priority, then position).
            #expect(try await harness.store.ids(status: .queued) == expected)
            try await harness.manager.pause(running.id)
        }
    }

    @Test func finishedResultsCanBeForgottenAndQueuedOnesMoved() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 20_000))
            let done = try await harness.download(harness.request("/file"))
            let events = harness.manager.events()
            let running = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: running.id, beyond: 0, in: events)
            let queued = try await harness.manager.add(["a", "b", "c", "d"].map { try harness.request("/\($0)") })
            let ids = queued.map(\.id)
            #expect(try await harness.manager.move(ids[3], toIndex: 1) == 1)
            #expect(await harness.manager.queuedIDs == [ids[0], ids[3], ids[1], ids[2]])
            #expect(try await harness.manager.move(ids[0], toIndex: 99) == 3)
            #expect(try await harness.manager.move(ids[2], toIndex: -5) == 0)
            #expect(await harness.manager.queuedIDs == [ids[2], ids[3], ids[1], ids[0]])
            await #expect { try await harness.manager.move(running.id, toIndex: 0) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }

            await #expect { try await harness.manager.forget(running.id) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }
            try await harness.manager.forget(done.record.id)
            #expect(try await harness.store.record(done.record.id) == nil)
            #expect(
                FileManager.default.fileExists(atPath: try #require(done.path)),
                "forgetting a result leaves its file alone")
            try await harness.manager.pause(running.id)
        }
    }

    @Test func pausingOrResumingAFinishedDownloadIsAConflict() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            await #expect { try await harness.manager.pause(outcome.record.id) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }
            await #expect { try await harness.manager.resume(outcome.record.id) } throws: {
                ($0 as? HaulError)?.code == .conflict
            }
            await #expect { try await harness.manager.pause(DownloadID(rawValue: "nope")) } throws: {
                ($0 as? HaulError)?.code == .notFound
            }
        }
    }
}

/// Calls that race each other through the actor's awaits.
@Suite(.timeLimit(.minutes(2))) struct QueueRaceTests {
    let payload = Payload(seed: 32, length: 300_000)

    @Test func concurrentResumesStartOneTransfer() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 100_000, then: .stallAfter(100_000)))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: record.id, beyond: 0, in: events)
            try await harness.manager.pause(record.id)
            harness.server.setRoute("/slow", Route(payload: payload))
            let manager = harness.manager
            async let first: Void = manager.resume(record.id)
            async let second: Void = manager.resume(record.id)
            async let all = manager.resumeAll()
            _ = try await (first, second, all)
            let ended = try await manager.outcome(of: record.id)
            #expect(ended.status == .completed, "\(ended)")
            #expect(harness.server.requests(to: "/slow").count == 2, "one transfer, one resume")
            #expect(payload.mismatch(inFileAt: harness.directory + "/slow") == nil)
        }
    }

    @Test func concurrentAddsOfOneURLAreOneDownload() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            // Stalls after 100 KB: it is still running however slowly the test goes.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
            let manager = harness.manager
            let requests = try (0..<200).map { try harness.request("/f\($0)") }
            async let batch = manager.add(requests)
            async let single = manager.add(harness.request("/f0"))
            async let other = manager.add(harness.request("/f0"))
            let (records, one, two) = try await (batch, single, other)
            #expect(one.id == records[0].id && two.id == records[0].id)
            #expect(try await harness.store.records(status: nil).count == 200)
            _ = try await manager.pauseAll()
        }
    }

    @Test func aFailedBatchGivesBackItsNames() async throws {
        try await withHarness { harness in
            let clash = try [harness.request("/a", output: "same.bin"), harness.request("/b", output: "same.bin")]
            await #expect(throws: HaulError.self) { try await harness.manager.add(clash) }
            #expect(try await harness.store.records(status: nil).isEmpty)
            harness.server.setRoute("/a", Route(payload: payload))
            let outcome = try await harness.download(harness.request("/a", output: "same.bin"))
            #expect(outcome.final.isCompleted)
        }
    }
}
