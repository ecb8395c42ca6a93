import NIOConcurrencyHelpers

/// Holds back the threads that reach it until a test opens it: a disk that does not answer.
///
/// It blocks a real thread, as a stuck `pwritev` or `fsync` does, so a test can show what else
/// still runs meanwhile. A thread held longer than `limit` opens the gate itself and the gate
/// says so (`expired`): that is the hang guard of a test whose code under test would otherwise
/// never let the test open the gate (every thread of Swift's cooperative pool held here, say).
public final class Gate: Sendable {
    private let condition = ConditionLock(value: false)
    private let state = NIOLockedValueBox(State())
    /// Tasks waiting for a condition on ``arrivals``: checked at each arrival.
    private let changes = Waiters()

    private struct State {
        var arrived: [String] = []
        var expired = false
    }

    public init() {}

    /// Blocks the calling thread until the gate opens or `limit` seconds pass; `key` names what
    /// arrived (a file's path, say).
    public func pass(_ key: String, limit: Double = 120) {
        state.withLockedValue { $0.arrived.append(key) }
        changes.changed()
        if condition.lock(whenValue: true, timeoutSeconds: limit) {
            condition.unlock()
        } else {
            state.withLockedValue { $0.expired = true }
            open()
        }
    }

    /// Lets every held thread go, and every later one through.
    public func open() {
        condition.lock()
        condition.unlock(withValue: true)
    }

    public var isOpen: Bool { condition.value }

    /// The keys of every `pass`, in order of arrival (held or not).
    public var arrivals: [String] { state.withLockedValue { $0.arrived } }

    /// Returns once ``arrivals`` satisfy `condition`: checked now and at each arrival, before
    /// the arriving thread is held. Returns early when the waiting task is cancelled (a test's
    /// time limit); the result is whether it holds.
    @discardableResult
    public func waitForArrivals(where condition: @escaping @Sendable ([String]) -> Bool) async -> Bool {
        await changes.wait { [self] in condition(arrivals) }
    }

    /// Whether a thread stopped waiting because its limit passed, not because the gate opened.
    public var expired: Bool { state.withLockedValue { $0.expired } }
}
