import Dispatch
@testable import Haul
import NIOConcurrencyHelpers
import Testing

/// `BlockingLanes`: jobs in order, never more at once than the width, and a lane's thread is its
/// own even when many other lanes are blocked (Dispatch's overcommit threads).
@Suite(.timeLimit(.minutes(1))) struct BlockingLanesTests {
    @Test func oneLaneRunsItsJobsInOrderOneAtATime() async throws {
        let lanes = BlockingLanes(width: 1, label: "test")
        let log = NIOLockedValueBox((order: [Int](), running: 0, most: 0))
        for n in 0..<500 {
            lanes.submit {
                log.withLockedValue { $0.running += 1; $0.most = max($0.most, $0.running) }
                log.withLockedValue { $0.running -= 1; $0.order.append(n) }
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
        let log = NIOLockedValueBox((started: 0, finished: 0))
        for _ in 0..<5 {
            lanes.submit {
                log.withLockedValue { $0.started += 1 }
                hold.wait()
                log.withLockedValue { $0.finished += 1 }
            }
        }
        while log.withLockedValue({ $0.started }) < 2 { await Task.yield() }
        // Two are held: the other three wait for a lane, whatever the time given to them.
        for _ in 0..<1_000 { await Task.yield() }
        #expect(log.withLockedValue { $0.started } == 2)
        for _ in 0..<5 { hold.signal() }
        while log.withLockedValue({ $0.finished }) < 5 { await Task.yield() }
        #expect(log.withLockedValue { $0.started } == 5)
    }

    @Test func manyBlockedLanesHoldNoOtherLaneBack() async throws {
        // More blocked lanes than cores, and than Dispatch's pool for ordinary queues.
        let blocked = (0..<64).map { BlockingLanes(width: 1, label: "blocked-\($0)") }
        let hold = DispatchSemaphore(value: 0)
        let started = NIOLockedValueBox(0)
        for lanes in blocked {
            lanes.submit {
                started.withLockedValue { $0 += 1 }
                hold.wait()
            }
        }
        while started.withLockedValue({ $0 }) < blocked.count { await Task.yield() }
        let free = BlockingLanes(width: 1, label: "free")
        #expect(try await free.run { 42 } == 42)
        for _ in blocked { hold.signal() }
    }
}
