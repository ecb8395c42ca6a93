import Haul
import HaulCore
import Testing

/// Group commit, the one line the store's writes and the manager's adds share: what arrives
/// while a batch runs is one batch, each caller gets its own answer, and a failed batch is
/// carried out again caller by caller.
@Suite(.timeLimit(.minutes(1))) struct BatchLineTests {
    /// What the line was asked to carry out, batch by batch; the first batch waits to be let go.
    actor Calls {
        var batches: [[Int]] = []
        var gate: CheckedContinuation<Void, Never>?

        func perform(_ batch: [Int]) async throws -> [String] {
            batches.append(batch)
            if batches.count == 1 { await withCheckedContinuation { gate = $0 } }
            if batch.count > 1, batch.contains(13) { throw HaulError(.store, "13 is refused") }
            if batch == [13] { throw HaulError(.fileExists, "13 alone") }
            return batch.map { "answer \($0)" }
        }

        func open() {
            gate?.resume()
            gate = nil
        }

        var waitingAtGate: Bool { gate != nil }
    }

    @Test func whatArrivesDuringABatchIsOneBatchAndAFailedOneIsSplit() async throws {
        let calls = Calls()
        let line = BatchLine<Int, Int, String> { _, batch in try await calls.perform(batch) }
        let first = Task { try await line.submit(1, to: 0) }
        while await !calls.waitingAtGate { await Task.yield() }
        let later = [2, 13, 4].map { value in Task { try await line.submit(value, to: 0) } }
        while await line.waitingCount(0) < 3 { await Task.yield() }
        await calls.open()
        #expect(try await first.value == "answer 1")
        #expect(try await later[0].value == "answer 2")
        await #expect { try await later[1].value } throws: { ($0 as? HaulError)?.code == .fileExists }
        #expect(try await later[2].value == "answer 4")
        // The three that waited were one batch; it failed, so each was carried out alone.
        let batches = await calls.batches
        try #require(batches.count == 5, "\(batches)")
        #expect(batches[0] == [1] && batches[1].sorted() == [2, 4, 13])
        #expect(Array(batches[2...]) == batches[1].map { [$0] })
    }
}
