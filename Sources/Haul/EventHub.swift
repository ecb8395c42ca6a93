import HaulCore
import NIOConcurrencyHelpers

/// Fans events out to every subscriber. Runners publish synchronously from their own tasks, so
/// this is a lock, not an actor. Each subscriber buffers at most `bufferLimit` events, dropping
/// the oldest: a reader that falls behind loses old progress, not the latest state.
final class EventHub: Sendable {
    private struct Subscriber {
        var filter: DownloadID?
        var continuation: AsyncStream<DownloadEvent>.Continuation
    }

    private struct State {
        var finished = false
        var next = 0
        var subscribers: [Int: Subscriber] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let bufferLimit: Int

    init(bufferLimit: Int = 4096) {
        self.bufferLimit = bufferLimit
    }

    func publish(_ event: DownloadEvent) {
        let targets = state.withLockedValue { $0.subscribers.values.filter { $0.filter == nil || $0.filter == event.id } }
        for target in targets { target.continuation.yield(event) }
    }

    /// Every event from now on, or only one download's.
    func stream(filter id: DownloadID? = nil) -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream(bufferingPolicy: .bufferingNewest(bufferLimit))
        let key = state.withLockedValue { state -> Int? in
            guard !state.finished else { return nil }
            defer { state.next += 1 }
            state.subscribers[state.next] = Subscriber(filter: id, continuation: continuation)
            return state.next
        }
        guard let key else {
            // After shutdown: nothing will ever come, so a late subscriber must not wait.
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    func finishAll() {
        let all = state.withLockedValue { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in all { subscriber.continuation.finish() }
    }
}
