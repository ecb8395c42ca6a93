import Dispatch
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// `BlockingLanes`: jobs in order, never more at once than the width, and a lane's thread is its
/// own even when many other lanes are blocked (Dispatch's overcommit threads).
@Suite(.timeLimit(.minutes(1))) struct BlockingLanesTests {
    @Test func oneLaneRunsItsJobsInOrderOneAtATime() async throws {
        let lanes = BlockingLanes(width: 1, label: "test")
        let log = NIOLockedValueBox((order: [Int](), running: 0, most: 0))
        for n in 0..<500 {
            lanes.submit {
                log.withLockedValue {
                    $0.running += 1
                    $0.most = max($0.most, $0.running)
                }
                log.withLockedValue {
                    $0.running -= 1
                    $0.order.append(n)
                }
            }
        }
        // Runs after all of them: one lane, in order.
        let seen = try await lanes.run { log.withLockedValue { $0 } }
        #expect(seen.order == Array(0..<500))
        #expect(seen.most == 1)
    }

    @Test func aThrownErrorReachesTheCaller() async throws {
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await BlockingLanes(width: 2, label: "test").run { throw Failure() } }
    }

    @Test func twoLanesRunTwoAtOnceAndNoMore() async throws {
        let lanes = BlockingLanes(width: 2, label: "test")
        let hold = DispatchSemaphore(value: 0)
        let log = NIOLockedValueBox((running: 0, most: 0, finished: 0))
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        var jobs: [Task<Void, any Error>] = []
        for _ in 0..<5 {
            jobs.append(
                Task {
                    try await lanes.run {
                        log.withLockedValue {
                            $0.running += 1
                            $0.most = max($0.most, $0.running)
                        }
                        start.yield()
                        hold.wait()
                        log.withLockedValue {
                            $0.running -= 1
                            $0.finished += 1
                        }
                    }
                })
        }
        var starts = started.makeAsyncIterator()
        for _ in 0..<2 { _ = await starts.next() }
        // Two hold their lanes. A job on other lanes runs meanwhile: a third would have had its
        // chance to start, were the width not kept.
        #expect(try await BlockingLanes(width: 1, label: "probe").run { 1 } == 1)
        #expect(log.withLockedValue { $0.running } == 2)
        for _ in 0..<5 { hold.signal() }
        for job in jobs { try await job.value }
        let seen = log.withLockedValue { $0 }
        #expect(seen.most == 2)
        #expect(seen.finished == 5)
    }

    @Test func manyBlockedLanesHoldNoOtherLaneBack() async throws {
        // More blocked lanes than cores, and than Dispatch's pool for ordinary queues.
        let blocked = (0..<64).map { BlockingLanes(width: 1, label: "blocked-\($0)") }
        let hold = DispatchSemaphore(value: 0)
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        for lanes in blocked {
            lanes.submit {
                start.yield()
                hold.wait()
            }
        }
        var starts = started.makeAsyncIterator()
        for _ in blocked { _ = await starts.next() }
        let free = BlockingLanes(width: 1, label: "free")
        #expect(try await free.run { 42 } == 42)
        for _ in blocked { hold.signal() }
    }
}
