import HaulCore
import NIOConcurrencyHelpers

/// The engine's side of `ConnectionBudget`: one per manager, shared by every run. It keeps the
/// budget behind a lock, tells each run its allowance (posted into the run's inbox), and lifts a
/// budget lowered by a refusal when its time is up (`run()`, a child of the manager's task
/// group). Every decision is the budget's.
final class HostBudgets: Sendable {
    private struct State {
        var budget: ConnectionBudget
        var listeners: [DownloadID: @Sendable (Int) -> Void] = [:]
    }

    private let state: NIOLockedValueBox<State>
    private let clock: any HaulClock
    /// The earliest time a lowered budget is lifted, each time it changes (nil: none is
    /// lowered); finished by `close()`, which ends `run()`.
    private let deadlines = AsyncStream.makeStream(of: Double?.self, bufferingPolicy: .bufferingNewest(1))

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
            scheduleExpiry(&state)
            return (changes, ())
        }
    }

    /// Lifts lowered budgets when their time is up, until `close()`: one sleep at a time, for
    /// the earliest deadline; a new earliest one replaces it (the sleep before is told so, and
    /// ends without lifting anything).
    func run() async {
        await withDiscardingTaskGroup { group in
            var current: AsyncStream<Void>.Continuation?
            for await deadline in deadlines.stream {
                current?.finish()
                current = nil
                guard let deadline else { continue }
                // Finished when a new deadline replaces this one; its reader ends when cancelled.
                let (replaced, replace) = AsyncStream.makeStream(of: Void.self)
                current = replace
                let wait = Duration.milliseconds(Int64(max(0, deadline - clock.seconds()) * 1000) + 1)
                group.addTask { [clock] in
                    let due = await withTaskGroup(of: Bool.self) { sleep in
                        sleep.addTask {
                            do {
                                try await clock.sleep(for: wait)
                                return true
                            } catch {
                                return false // replaced, or the manager's group is cancelled
                            }
                        }
                        sleep.addTask {
                            for await _ in replaced {}
                            return false
                        }
                        defer { sleep.cancelAll() }
                        return await sleep.next() ?? false
                    }
                    if due { self.expire() }
                }
            }
            current?.finish()
        }
    }

    /// Ends `run()`: the manager's task group is ending.
    func close() {
        deadlines.continuation.finish()
    }

    private func expire() {
        let now = clock.seconds()
        update { state in
            let changes = state.budget.expire(now: now)
            scheduleExpiry(&state)
            return (changes, ())
        }
    }

    /// Tells `run()` the earliest lowered budget's deadline.
    private func scheduleExpiry(_ state: inout State) {
        deadlines.continuation.yield(state.budget.nextExpiry)
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
