import Dispatch
import NIOConcurrencyHelpers
import NIOCore

/// Runs blocking jobs, at most `width` at a time and in the order they were submitted, on
/// threads that exist only while there is work.
///
/// Each lane is a serial `DispatchQueue`. Dispatch gives a serial queue with work a thread of its
/// own (its overcommit pool), even when other queues' threads are blocked, and lets idle threads
/// go after a few seconds. So a download whose disk holds a write back holds only its own lane,
/// as when each run had threads of its own, while a thousand slow downloads, whose writes come
/// every 200 ms and take microseconds, need a handful of threads instead of three thousand
/// (a run used to start three `NIOThreadPool` threads: with `-j 1000`, 3,011 threads).
///
/// A job is never dropped: there is nothing to shut down, and a job submitted runs.
final class BlockingLanes: Sendable {
    private let queues: [DispatchQueue]
    private let state: NIOLockedValueBox<State>

    private struct State {
        var jobs = CircularBuffer<@Sendable () -> Void>()
        /// The lanes with no job running or queued for them.
        var idle: [Int]
    }

    init(width: Int, label: String) {
        precondition(width > 0)
        queues = (0..<width).map { DispatchQueue(label: "\(label).\($0)") }
        state = NIOLockedValueBox(State(idle: Array((0..<width).reversed())))
    }

    /// Queues `job`; it starts when a lane is free, after the jobs submitted before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let lane = state.withLockedValue { state -> Int? in
            state.jobs.append(job)
            return state.idle.popLast()
        }
        if let lane { queues[lane].async { self.drain(lane) } }
    }

    /// Runs `body` on a lane and returns what it returned or threw. The awaiting task is resumed
    /// straight from the lane's thread; the job runs even if the task is cancelled (cancellation
    /// is for `body` to observe).
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Takes jobs until none is left, then marks the lane idle (under the lock, so a job submitted
    /// meanwhile either is taken here or finds the lane idle and starts it again).
    private func drain(_ lane: Int) {
        while let job = state.withLockedValue({ state -> (@Sendable () -> Void)? in
            if let job = state.jobs.popFirst() { return job }
            state.idle.append(lane)
            return nil
        }) {
            job()
        }
    }
}
