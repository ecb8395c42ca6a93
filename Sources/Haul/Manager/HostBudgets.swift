import HaulCore
import NIOConcurrencyHelpers

/// The engine's side of `ConnectionBudget`: one per manager, shared by every run. It keeps the
/// budget behind a lock, tells each run its allowance (posted into the run's inbox), and lifts a
/// budget lowered by a refusal when its time is up. Every decision is the budget's.
final class HostBudgets: Sendable {
    private struct State {
        var budget: ConnectionBudget
        var listeners: [DownloadID: @Sendable (Int) -> Void] = [:]
        var expiry: Task<Void, Never>?
    }

    private let state: NIOLockedValueBox<State>
    private let clock: any HaulClock

    init(limit: Int?, clock: any HaulClock) {
        self.state = NIOLockedValueBox(State(budget: ConnectionBudget(limit: limit)))
        self.clock = clock
    }

    /// `id` starts on `host`, wanting `wants` connections; `listener` hears every later change of
    /// its allowance. Returns its allowance now (0: wait for one).
    func join(
        _ id: DownloadID, host: String, wants: Int, growsFrom start: Int? = nil,
        listener: @escaping @Sendable (Int) -> Void
    ) -> Int {
        let now = clock.seconds()
        return update { state in
            state.listeners[id] = listener
            let changes = state.budget.join(id, host: host, wants: wants, growsFrom: start, now: now)
            return (changes.filter { $0.key != id }, state.budget.allowance(id, host: host, now: now))
        }
    }

    /// `id` has `count` connections now.
    func using(_ id: DownloadID, host: String, count: Int) {
        let now = clock.seconds()
        update { state in (state.budget.using(id, host: host, count: count, now: now), ()) }
    }

    func leave(_ id: DownloadID, host: String) {
        let now = clock.seconds()
        update { state in
            state.listeners[id] = nil
            return (state.budget.leave(id, host: host, now: now), ())
        }
    }

    /// `host` refused a connection: its budget is lowered for `seconds`.
    func refused(host: String, seconds: Double) {
        let now = clock.seconds()
        update { state in
            let changes = state.budget.refused(host: host, seconds: seconds, now: now)
            scheduleExpiry(&state, now: now)
            return (changes, ())
        }
    }

    private func expire() {
        let now = clock.seconds()
        update { state in
            state.expiry = nil
            let changes = state.budget.expire(now: now)
            scheduleExpiry(&state, now: now)
            return (changes, ())
        }
    }

    /// One timer, for the earliest lowered budget.
    private func scheduleExpiry(_ state: inout State, now: Double) {
        state.expiry?.cancel()
        state.expiry = nil
        guard let until = state.budget.nextExpiry else { return }
        let clock = self.clock
        state.expiry = Task { [weak self] in
            do {
                try await clock.sleep(for: .milliseconds(Int64(max(0, until - now) * 1000) + 1))
            } catch {
                return // replaced by a later timer
            }
            self?.expire()
        }
    }

    /// Runs `body` under the lock, then tells the listeners of the allowances it changed.
    @discardableResult
    private func update<T>(_ body: (inout State) -> (ConnectionBudget.Changes, T)) -> T {
        let (calls, result) = state.withLockedValue { state in
            let (changes, result) = body(&state)
            let calls = changes.compactMap { id, allowance in state.listeners[id].map { ($0, allowance) } }
            return (calls, result)
        }
        for (listener, allowance) in calls { listener(allowance) }
        return result
    }
}
