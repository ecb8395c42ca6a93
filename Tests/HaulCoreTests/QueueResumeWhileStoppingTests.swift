import HaulCore
import Testing

/// A resume that reaches the queue while the download's run is still stopping as paused: the pause
/// has checkpointed (its caller was answered, the page shows it paused) but the run has not ended.
/// The resume must not be lost (CI saw the web page's resume leave a download paused for good).
@Suite(.timeLimit(.minutes(1))) struct QueueResumeWhileStoppingTests {
    typealias Tests = DownloadQueueTests

    @Test func aResumeWhileTheRunStopsAsPausedQueuesItOnceTheRunEnds() throws {
        var queue = Tests.oneRunning()
        let a = Tests.id("a")
        #expect(queue.pausing([(a, .running)]) == [.stopRun(a, as: .paused)])
        // The run saved its checkpoint paused; it has not ended yet.
        let stopped = try Tests.record("a", .paused)
        #expect(queue.resuming([stopped]) == [], "nothing to do until the run ends")
        let ended = queue.runEnded(a, generation: 1, Tests.ran(stopped))
        #expect(ended.contains(.readd(stopped, request: stopped.request)))
        #expect(!queue.paused.contains(a), "it does not join the paused half of the list")
        // A record read before the checkpoint (still running) is resumed the same way.
        var again = Tests.oneRunning()
        _ = again.pausing([(a, .running)])
        #expect(again.resuming([try Tests.record("a", .running)]) == [])
        #expect(
            again.runEnded(a, generation: 1, Tests.ran(stopped)).contains(.readd(stopped, request: stopped.request)))
    }

    @Test func aPauseAfterTheResumeWins() throws {
        var queue = Tests.oneRunning()
        let a = Tests.id("a")
        _ = queue.pausing([(a, .running)])
        let stopped = try Tests.record("a", .paused)
        _ = queue.resuming([stopped])
        _ = queue.pausing([(a, .paused)])
        let ended = queue.runEnded(a, generation: 1, Tests.ran(stopped))
        #expect(!ended.contains { if case .readd = $0 { true } else { false } })
        #expect(queue.paused.contains(a))
    }

    @Test func aRunThatCompletesAnywayIsNotPickedUpAgain() throws {
        var queue = Tests.oneRunning()
        let a = Tests.id("a")
        _ = queue.pausing([(a, .running)])
        _ = queue.resuming([try Tests.record("a", .running)])
        let done = try Tests.record("a", .completed)
        let ended = queue.runEnded(a, generation: 1, Tests.ran(done))
        #expect(!ended.contains { if case .readd = $0 { true } else { false } })
        #expect(queue.state(of: a) == .idle)
    }
}
