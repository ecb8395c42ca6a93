import Foundation
import HaulCore
import HaulStore
import HaulTesting
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// Adds that arrive while another is being saved are added together: one transaction for all
/// of them, each caller answered with its own records, and a bad request fails only its caller.
@Suite(.timeLimit(.minutes(2))) struct AddLineTests {
    @Test func addsThatArriveTogetherAreSavedTogether() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            let hold = AsyncHold()
            store.hold = hold
            // The first add is held in its save; eight more arrive meanwhile.
            let first = Task { try await manager.add(harness.request("/first")) }
            #expect(await hold.waitForArrivals(1))
            let requests = try (0..<8).map { try harness.request("/a\($0)") }
            let later = requests.map { request in Task { try await manager.add(request) } }
            #expect(await manager.inboxHolds { $0.waitingAdds == 8 })
            await hold.open()
            let firstID = try await first.value.id
            var ids: [DownloadID] = []
            for task in later { ids.append(try await task.value.id) }
            #expect(Set(ids).count == 8 && !ids.contains(firstID))
            #expect(store.batches.withLockedValue { $0 } == [1, 8], "the eight that waited are one save")
            // Each caller got the download for its own URL.
            for (index, id) in ids.enumerated() {
                #expect(try await manager.record(id)?.request.url == requests[index].url)
            }
            await manager.shutdown()
        }
    }

    @Test func aBadRequestInTheLineFailsOnlyItsCaller() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (store, manager) = try await harness.countingManager()
            let hold = AsyncHold()
            store.hold = hold
            #expect(
                FileManager.default.createFile(atPath: harness.directory + "/taken.bin", contents: Data("mine".utf8)))
            let first = Task { try await manager.add(harness.request("/first")) }
            #expect(await hold.waitForArrivals(1))
            let good = try (0..<3).map { try harness.request("/g\($0)") }
            let goodTasks = good.map { request in Task { try await manager.add(request) } }
            let bad = Task { try await manager.add(harness.request("/other", output: "taken.bin")) }
            #expect(await manager.inboxHolds { $0.waitingAdds == 4 })
            await hold.open()
            _ = try await first.value
            for task in goodTasks { _ = try await task.value }
            await #expect { try await bad.value } throws: { ($0 as? HaulError)?.code == .fileExists }
            #expect(try String(contentsOfFile: harness.directory + "/taken.bin", encoding: .utf8) == "mine")
            #expect(try await harness.store.records(status: nil).count == 4)
            await manager.shutdown()
        }
    }
}
