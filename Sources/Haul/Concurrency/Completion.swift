import NIOConcurrencyHelpers

/// Something that happens once (a run's end, the manager's shutdown), awaited by any number of
/// callers: those that come after it return at once.
final class Completion: Sendable {
    private struct State {
        var done = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// It happened: every waiter returns, and every later one at once.
    func finish() {
        let waiters = state.withLockedValue { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once it has happened.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}
