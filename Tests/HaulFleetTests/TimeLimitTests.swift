import HaulCore
import NIOConcurrencyHelpers
import Testing

@testable import HaulFleet

/// The fleet's queries answer within their limit even when the work under them ignores
/// cancellation, as a PostgresNIO query already sent does: the caller goes on and the work is
/// left to end by itself.
@Suite(.timeLimit(.minutes(1))) struct TimeLimitTests {
    /// Work that waits, ignoring cancellation, until the test lets it go (a continuation is
    /// never resumed by a cancel), or ten seconds have passed: a time limit that waited for it
    /// fails the test instead of hanging it.
    final class StuckWork: Sendable {
        init() {
            Task { [self] in
                try await Task.sleep(for: .seconds(10))
                release()
            }
        }

        private let waiting = NIOLockedValueBox<(continuation: CheckedContinuation<Void, Never>?, released: Bool)>(
            (nil, false))
        let ended = NIOLockedValueBox(false)

        func run() async -> Int {
            await withCheckedContinuation { continuation in
                let released = waiting.withLockedValue { state in
                    state.continuation = continuation
                    return state.released
                }
                if released { release() }
            }
            ended.withLockedValue { $0 = true }
            return 7
        }

        func release() {
            let continuation = waiting.withLockedValue { state in
                state.released = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume()
        }
    }

    @Test func workThatIgnoresCancellationDoesNotHoldTheCaller() async throws {
        let work = StuckWork()
        let answer = try await TimeLimit.run(.milliseconds(50)) { await work.run() }
        // The caller was answered while the work still waited: with a task group it would
        // have waited with it.
        #expect(answer == nil)
        #expect(work.ended.withLockedValue { $0 } == false)
        work.release()
    }

    @Test func anAnswerInTimeIsReturned() async throws {
        let work = StuckWork()
        work.release()
        #expect(try await TimeLimit.run(.seconds(600)) { await work.run() } == 7)
        #expect(work.ended.withLockedValue { $0 })
    }

    @Test func theWorksErrorComesOut() async throws {
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await TimeLimit.run(.seconds(600)) { () async throws -> Int in throw Refused() }
        }
    }

    @Test func aCancelledCallerIsAnsweredAtOnce() async throws {
        let work = StuckWork()
        let caller = Task { try await TimeLimit.run(.seconds(600)) { await work.run() } }
        caller.cancel()
        await #expect(throws: CancellationError.self) { _ = try await caller.value }
        #expect(work.ended.withLockedValue { $0 } == false)
        work.release()
    }

    /// Through the store's own wrapper: past the limit, `storeUnavailable` naming the query.
    @Test func theStoreSaysTheDatabaseDidNotAnswer() async throws {
        let work = StuckWork()
        let error = await #expect(throws: HaulError.self) {
            _ = try await PostgresDownloadStore.timed("save a checkpoint", limit: .milliseconds(50)) {
                await work.run()
            }
        }
        #expect(error?.code == .storeUnavailable)
        #expect(error?.message.contains("save a checkpoint") == true)
        #expect(work.ended.withLockedValue { $0 } == false)
        work.release()
    }
}
