import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// A group's finish, written by the manager on a real SQLite store: once its last download
/// completes and before that download's outcome is told; at the next start when a process
/// stopped between the two; and kept failed with why when it cannot be written, then written by
/// the next start once it can.
@Suite(.timeLimit(.minutes(2))) struct GroupFinishTests {
    static func cacheFinish(commit: String) -> ContentFinish {
        .hubCache(
            HubCacheFinish(
                links: [.init(link: "snapshots/\(commit)/a.bin", target: "../../a.bin")],
                ref: .init(path: "refs/main", commit: commit)))
    }

    static func group(in directory: String, members: [DownloadID] = [], commit: String = "c0ffee") -> DownloadGroup {
        DownloadGroup(
            id: .random(), name: "hf://org/model", directory: directory, members: members,
            finish: cacheFinish(commit: commit), createdAt: 1)
    }

    static func ref(in directory: String) -> String? {
        FileManager.default.contents(atPath: directory + "/refs/main").map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func theFinishIsWrittenWhenTheLastDownloadCompletesBeforeItsOutcomeIsTold() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/a.bin", Route(payload: Payload(seed: 1, length: 300_000)))
            harness.server.setRoute("/b.bin", Route(payload: Payload(seed: 2, length: 200_000), throttle: 400_000))
            let outcomes = harness.manager.outcomes()
            let records = try await harness.manager.add(
                [try harness.request("/a.bin"), try harness.request("/b.bin")], group: Self.group(in: harness.directory)
            )
            var pending = Set(records.map(\.id))
            for await outcome in outcomes where pending.remove(outcome.id) != nil {
                #expect(outcome.status == .completed)
                // Each outcome comes after its group's check: the last one's after the finish.
                #expect((Self.ref(in: harness.directory) == "c0ffee") == pending.isEmpty)
                if pending.isEmpty { break }
            }
            let stored = try #require(try await harness.store.groups(containing: records[1].id).first)
            #expect(stored.members == records.map(\.id) && stored.state == .finished)
            let link = try FileManager.default.destinationOfSymbolicLink(
                atPath: harness.directory + "/snapshots/c0ffee/a.bin")
            #expect(link == "../../a.bin")
        }
    }

    @Test func aGroupLeftUnfinishedByAStoppedProcessIsFinishedAtTheNextStart() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/a.bin", Route(payload: Payload(seed: 1, length: 100_000)))
            let done = try await harness.download(try harness.request("/a.bin"))
            #expect(done.record.status == .completed)
            // What a kill between the last completion and the finish leaves: the download stored
            // completed, its group waiting, nothing written.
            let group = Self.group(in: harness.directory, members: [done.record.id])
            try await harness.store.saveGroup(group)
            #expect(Self.ref(in: harness.directory) == nil)
            let restarted = try await harness.restartedManager()
            try await restarted.restore()
            #expect(Self.ref(in: harness.directory) == "c0ffee")
            #expect(try await harness.store.group(group.id)?.state == .finished)
            await restarted.shutdown()
        }
    }

    @Test func aFinishThatFailsIsKeptWithWhyAndWrittenByTheNextStart() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/a.bin", Route(payload: Payload(seed: 1, length: 100_000)))
            // `refs` is a file, where the finish needs a folder: its write fails.
            FileManager.default.createFile(atPath: harness.directory + "/refs", contents: Data("x".utf8))
            let outcomes = harness.manager.outcomes()
            let records = try await harness.manager.add(
                [try harness.request("/a.bin")], group: Self.group(in: harness.directory))
            for await outcome in outcomes where outcome.id == records[0].id { break }
            let failed = try #require(try await harness.store.groups(containing: records[0].id).first)
            #expect(failed.state == .failed && failed.error != nil)
            #expect(try await harness.store.unfinishedGroups().map(\.id) == [failed.id])
            // Mended: the next start writes it.
            try FileManager.default.removeItem(atPath: harness.directory + "/refs")
            let restarted = try await harness.restartedManager()
            try await restarted.restore()
            #expect(Self.ref(in: harness.directory) == "c0ffee")
            #expect(try await harness.store.group(failed.id)?.state == .finished)
            await restarted.shutdown()
        }
    }
}
