import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// `addFollowing`: a batch's records first, then its downloads' events and one outcome each,
/// even for those settled within the add itself (a file found complete), and the stream ends
/// once all have their outcome.
@Suite(.timeLimit(.minutes(1))) struct AddFollowingTests {
    func follow(_ manager: DownloadManager, _ requests: [DownloadRequest]) async throws -> [DownloadManager.Followed] {
        var items: [DownloadManager.Followed] = []
        for try await item in manager.addFollowing(requests) { items.append(item) }
        return items
    }

    @Test func nothingComesBeforeTheRecordsAndEachDownloadEndsOnce() async throws {
        try await withHarness(maxConcurrent: 2) { harness in
            let payloads = (0..<5).map { Payload(seed: 60 + UInt64($0), length: 20_000) }
            for (index, payload) in payloads.enumerated() {
                harness.server.setRoute("/f\(index)", Route(payload: payload))
            }
            let requests = try (0..<5).map { try harness.request("/f\($0)") }
            let items = try await follow(harness.manager, requests)
            guard case .added(let records) = items.first else {
                Issue.record("the first item is not the batch's records: \(String(describing: items.first))")
                return
            }
            #expect(records.map(\.request.url) == requests.map(\.url))
            let ids = Set(records.map(\.id))
            var outcomes: [DownloadID] = []
            for item in items.dropFirst() {
                switch item {
                case .added: Issue.record("a second .added")
                case .event(let event): #expect(ids.contains(event.id))
                case .outcome(let outcome):
                    #expect(outcome.status == .completed)
                    outcomes.append(outcome.id)
                }
            }
            #expect(outcomes.count == 5 && Set(outcomes) == ids, "one outcome each")
        }
    }

    /// A download whose file is complete is settled inside the add's own step, before the add
    /// returns: its follower still hears it, after the records.
    @Test func aDownloadFoundCompleteInTheAddIsFollowedToo() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/done", Route(payload: Payload(seed: 70, length: 10_000)))
            let first = try await follow(harness.manager, [try harness.request("/done")])
            #expect(first.count >= 2)
            let again = try await follow(harness.manager, [try harness.request("/done")])
            let outcomes = again.compactMap { item -> DownloadOutcome? in
                if case .outcome(let outcome) = item { outcome } else { nil }
            }
            guard case .added(let records) = again.first, let outcome = outcomes.first, outcomes.count == 1 else {
                Issue.record("not records, then one outcome: \(again)")
                return
            }
            #expect(outcome.id == records.first?.id && outcome.alreadyComplete)
            #expect(harness.server.requests(to: "/done").count == 1, "nothing fetched again")
        }
    }

    @Test func aRefusedAddThrowsAndYieldsNothing() async throws {
        try await withHarness { harness in
            #expect(
                FileManager.default.createFile(atPath: harness.directory + "/taken.bin", contents: Data("mine".utf8)))
            var items: [DownloadManager.Followed] = []
            await #expect {
                for try await item in harness.manager.addFollowing([try harness.request("/x", output: "taken.bin")]) {
                    items.append(item)
                }
            } throws: { ($0 as? HaulError)?.code == .fileExists }
            #expect(items.isEmpty)
        }
    }
}
