import NIOConcurrencyHelpers

/// A clock the test advances by hand, so retry/backoff code can be tested without waiting.
///
/// Code under test takes a `some Clock<Duration>`; production passes `ContinuousClock`, tests
/// pass a `ManualClock`, wait until the code is asleep (``waitForSleepers(count:)``), check the
/// requested deadline (``sleepers``) and ``advance(by:)`` past it. Time never moves on its own,
/// so backoff schedules are asserted exactly and tests take no wall-clock time.
public final class ManualClock: Clock, Sendable {
    /// A point on the manual clock: the time advanced since the clock was created.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        public typealias Duration = Swift.Duration

        /// Time since the clock was created.
        public var offset: Duration

        public init(offset: Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }
    }

    private enum Sleeper {
        /// Registered, continuation not yet stored.
        case starting(Instant)
        /// Cancelled before the continuation was stored.
        case cancelled
        case waiting(Instant, CheckedContinuation<Void, any Error>)
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Tasks waiting for a condition on ``sleepers``: checked whenever a sleeper comes or goes.
    private let changes = Waiters()

    public init() {}

    /// The current instant; only ``advance(by:)`` moves it.
    public var now: Instant {
        state.withLockedValue { $0.now }
    }

    /// Zero: the clock has no granularity of its own.
    public var minimumResolution: Duration {
        .zero
    }

    /// Suspends until the clock has been advanced to `deadline` or beyond (returns at once if it
    /// already has). Throws `CancellationError` if the task is or gets cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLockedValue { state in
            state.nextID += 1
            state.sleepers[state.nextID] = .starting(deadline)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLockedValue { state in
                    if case .cancelled = state.sleepers[id] {
                        state.sleepers[id] = nil
                        return .failure(CancellationError())
                    }
                    if deadline <= state.now {
                        state.sleepers[id] = nil
                        return .success(())
                    }
                    state.sleepers[id] = .waiting(deadline, continuation)
                    return nil
                }
                if let outcome {
                    continuation.resume(with: outcome)
                } else {
                    changes.changed()
                }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, any Error>? = state.withLockedValue { state in
                switch state.sleepers[id] {
                case .starting:
                    state.sleepers[id] = .cancelled
                    return nil
                case .waiting(_, let continuation):
                    state.sleepers[id] = nil
                    return continuation
                case .cancelled, nil:
                    return nil
                }
            }
            continuation?.resume(throwing: CancellationError())
            changes.changed()
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has been reached, earliest
    /// deadline first.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock cannot go backwards")
        let woken: [CheckedContinuation<Void, any Error>] = state.withLockedValue { state in
            state.now = state.now.advanced(by: duration)
            var due: [(UInt64, Instant, CheckedContinuation<Void, any Error>)] = []
            for (id, sleeper) in state.sleepers {
                if case .waiting(let deadline, let continuation) = sleeper, deadline <= state.now {
                    due.append((id, deadline, continuation))
                }
            }
            for (id, _, _) in due {
                state.sleepers[id] = nil
            }
            return due.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map { $0.2 }
        }
        for continuation in woken {
            continuation.resume()
        }
        changes.changed()
    }

    /// The deadlines currently waited on, earliest first.
    public var sleepers: [Instant] {
        state.withLockedValue { state in
            state.sleepers.values.compactMap { sleeper -> Instant? in
                if case .waiting(let deadline, _) = sleeper { deadline } else { nil }
            }
            .sorted()
        }
    }

    /// Returns once at least `count` tasks are sleeping on this clock (or the waiting task is
    /// cancelled), so a test can advance only after the code under test has gone to sleep.
    public func waitForSleepers(count: Int) async {
        await waitForSleepers { $0.count >= count }
    }

    /// Returns once the deadlines waited on (``sleepers``, earliest first) satisfy `condition`:
    /// checked now and each time a sleeper comes or goes, never on a timer. Returns early when
    /// the waiting task is cancelled (a test's time limit); the result is whether it holds.
    @discardableResult
    public func waitForSleepers(where condition: @escaping @Sendable ([Instant]) -> Bool) async -> Bool {
        await changes.wait { [self] in condition(sleepers) }
    }
}
