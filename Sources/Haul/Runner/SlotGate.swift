import HaulCore
import NIOConcurrencyHelpers

/// The gate a probe's responses pass before their bodies are read (`SlotProbes`): a run started
/// without a slot asks the queue for one when a response needs it (`SlotProbes.needsSlot`), and
/// its connection task waits here, the response unread, until the queue grants it (`open`). A
/// stop cancels the task, which leaves the gate at once. Once open it stays open; a response that
/// needs no slot passes. What decides is `SlotProbes` and the queue; this only waits.
final class SlotGate: Sendable {
    private struct State {
        var open = false
        var asked = false
        var toldHTTP2 = false
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
    }

    private let state = NIOLockedValueBox(State())
    /// Tells the queue the run's response needs a slot (once).
    private let ask: @Sendable () -> Void
    /// Tells the queue the host answered over HTTP/2 (once per gate; the manager tells the queue
    /// once per host).
    private let spokeHTTP2: @Sendable () -> Void

    init(ask: @escaping @Sendable () -> Void, spokeHTTP2: @escaping @Sendable () -> Void) {
        self.ask = ask
        self.spokeHTTP2 = spokeHTTP2
    }

    /// Returns once `head`'s body may be read: at once when it needs no slot or the gate is open,
    /// else when the queue grants one. Throws `CancellationError` when the task is cancelled
    /// while it waits.
    func pass(_ head: ResponseHead) async throws {
        let (tellHTTP2, waiter) = state.withLockedValue { state in
            let tell = !state.toldHTTP2 && SlotProbes.spokeHTTP2(head)
            if tell { state.toldHTTP2 = true }
            guard !state.open, SlotProbes.needsSlot(head) else { return (tell, Int?.none) }
            defer { state.nextWaiter += 1 }
            return (tell, state.nextWaiter)
        }
        if tellHTTP2 { spokeHTTP2() }
        guard let waiter else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (passes, asks) = state.withLockedValue { state in
                    if state.open || Task.isCancelled { return (true, false) }
                    state.waiters[waiter] = continuation
                    defer { state.asked = true }
                    return (false, !state.asked)
                }
                if passes { continuation.resume() }
                if asks { ask() }
            }
        } onCancel: {
            let waiting = state.withLockedValue { $0.waiters.removeValue(forKey: waiter) }
            waiting?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// The queue granted a slot: every waiting response is read, and every later one passes.
    func open() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}
