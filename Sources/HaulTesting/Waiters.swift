import NIOConcurrencyHelpers

/// Tasks waiting for a condition on state that other threads change: whoever changes the state
/// calls ``changed()``, which checks each waiter's condition again and resumes those it now holds
/// for.
///
/// A test waits on the event itself instead of polling with sleeps: the waiter wakes at the
/// change that makes its condition true, and nothing runs between changes. A waiting task that
/// is cancelled (its test's time limit) is resumed too, so the test goes on to assert the
/// condition and fails instead of hanging.
public final class Waiters: Sendable {
    private enum Waiter {
        /// Counted, its continuation not stored yet.
        case starting
        /// Cancelled before its continuation was stored.
        case cancelled
        case waiting(condition: @Sendable () -> Bool, continuation: CheckedContinuation<Void, Never>)
    }

    private struct State {
        var nextID: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// Returns once `condition` holds: checked now, and at every ``changed()`` after. Returns
    /// early when the waiting task is cancelled; the result is whether the condition holds.
    ///
    /// The condition is evaluated outside this object's lock, on the thread that calls
    /// ``changed()``: it may take the lock of the state it reads, as long as `changed()` is not
    /// called under that lock.
    @discardableResult
    public func wait(until condition: @escaping @Sendable () -> Bool) async -> Bool {
        if condition() { return true }
        let id = state.withLockedValue { state in
            state.nextID += 1
            state.waiters[state.nextID] = .starting
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLockedValue { state in
                    if case .cancelled = state.waiters[id] {
                        state.waiters[id] = nil
                        return false
                    }
                    state.waiters[id] = .waiting(condition: condition, continuation: continuation)
                    return true
                }
                guard registered else { return continuation.resume() }
                // A change made before the waiter was stored found no one to wake.
                if condition() { take(id)?.resume() }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, Never>? = state.withLockedValue { state in
                switch state.waiters[id] {
                case .starting:
                    state.waiters[id] = .cancelled
                    return nil
                case .waiting(_, let continuation):
                    state.waiters[id] = nil
                    return continuation
                case .cancelled, nil:
                    return nil
                }
            }
            continuation?.resume()
        }
        return condition()
    }

    /// The state changed: resumes every waiter whose condition now holds.
    public func changed() {
        let waiting = state.withLockedValue { state in
            state.waiters.compactMap { id, waiter -> (UInt64, @Sendable () -> Bool)? in
                if case .waiting(let condition, _) = waiter { (id, condition) } else { nil }
            }
        }
        for (id, condition) in waiting where condition() {
            take(id)?.resume()
        }
    }

    /// Removes a stored waiter and returns its continuation: nil when another caller took it
    /// first (each continuation is resumed once).
    private func take(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
        state.withLockedValue { state in
            guard case .waiting(_, let continuation) = state.waiters[id] else { return nil }
            state.waiters[id] = nil
            return continuation
        }
    }
}

/// Suspends until the task is cancelled, then throws `CancellationError`: a fake body or server
/// that stalls until whoever runs it stops it, with no timer to outlast.
public func suspendUntilCancelled() async throws {
    let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
    await withTaskCancellationHandler {
        for await _ in stream {}
    } onCancel: {
        continuation.finish()
    }
    throw CancellationError()
}
