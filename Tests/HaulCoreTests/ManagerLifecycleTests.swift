import HaulCore
import Testing

/// A manager's loop: nothing runs it by itself, an operation before anyone runs it is refused
/// with a clear error, `run()` runs the loop once, and a shutdown stops it once.
@Suite(.timeLimit(.minutes(1))) struct ManagerLifecycleTests {
    @Test func anOperationBeforeAnyoneRunsTheManagerIsRefusedAndAfterAPrepareItWaits() throws {
        var lifecycle = ManagerLifecycle()
        #expect(throws: HaulError.self) { try lifecycle.checkOperation() }
        do {
            try lifecycle.checkOperation()
        } catch {
            #expect(error.code == .usage && error.message.contains("withManager"))
        }
        try lifecycle.prepare()
        try lifecycle.checkOperation()
        let ranFirst = lifecycle.runCalled()
        #expect(ranFirst)
        let ranAgain = lifecycle.runCalled()
        #expect(!ranAgain, "run() runs the loop once")
        #expect(throws: HaulError.self) { try lifecycle.prepare() }
        try lifecycle.checkOperation()
    }

    @Test func aShutdownOfARunningManagerStopsInTheLoopOnceAndThenRefuses() throws {
        var lifecycle = ManagerLifecycle()
        let ran = lifecycle.runCalled()
        #expect(ran)
        let first = lifecycle.shutdown()
        #expect(first == .stopInLoop)
        let second = lifecycle.shutdown()
        #expect(second == .wait, "a second call waits for the first")
        let begins = lifecycle.beginStopping()
        let beginsAgain = lifecycle.beginStopping()
        #expect(begins && !beginsAgain, "its work is done once")
        #expect(lifecycle.waitsForRuns)
        lifecycle.loopEnded()
        #expect(!lifecycle.waitsForRuns)
        do {
            try lifecycle.checkOperation()
            Issue.record("an operation after the shutdown is refused")
        } catch {
            #expect(error.code == .interrupted)
        }
        let runsAfter = lifecycle.runCalled()
        #expect(!runsAfter)
    }

    @Test func aManagerNeverRunStopsAtOnceAndALoopCancelledWithoutAShutdownStopsToo() {
        var never = ManagerLifecycle()
        let stop = never.shutdown()
        #expect(stop == .stopHere)
        #expect(!never.waitsForRuns, "nothing ran: no run to wait for")
        let runsAfter = never.runCalled()
        #expect(!runsAfter, "a manager shut down is not run after")

        var cancelled = ManagerLifecycle()
        let ran = cancelled.runCalled()
        #expect(ran)
        cancelled.loopEnded()
        let begins = cancelled.beginStopping()
        #expect(begins, "the loop's end does the shutdown's work")
        let later = cancelled.shutdown()
        #expect(later == .wait, "a shutdown after waits for that work")
    }
}
