import NIOConcurrencyHelpers

/// One reader's inbox: anyone posts, from any thread; the one reader takes everything that
/// waits at once, oldest first, so it can treat what arrived together as one batch (the download
/// manager's adds). Once closed, posts are refused and the reader gets what was left, then nil.
final class Inbox<Message: Sendable>: Sendable {
    private struct State {
        var messages: [Message] = []
        var reader: CheckedContinuation<[Message]?, Never>?
        var closed = false
        /// The reader's task was cancelled: it takes nothing more.
        var cancelled = false
    }

    private let state = NIOLockedValueBox(State())
    /// Told after every post and take, outside the lock: a test waits on it instead of polling.
    private let changed: NIOLockedValueBox<(@Sendable () -> Void)?> = NIOLockedValueBox(nil)

    init() {}

    /// Hands `message` to the reader. False when the inbox is closed: nobody will read it.
    @discardableResult
    func post(_ message: Message) -> Bool {
        let (posted, reader, taken) = state.withLockedValue {
            state -> (Bool, CheckedContinuation<[Message]?, Never>?, [Message]) in
            guard !state.closed else { return (false, nil, []) }
            state.messages.append(message)
            guard let reader = state.reader else { return (true, nil, []) }
            state.reader = nil
            defer { state.messages = [] }
            return (true, reader, state.messages)
        }
        reader?.resume(returning: taken)
        notify()
        return posted
    }

    /// Everything waiting, oldest first, once there is something; nil once the inbox is closed
    /// and empty, or the reader's task is cancelled.
    func next() async -> [Message]? {
        let messages = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Message]?, Never>) in
                let ready = state.withLockedValue { state -> [Message]?? in
                    if state.cancelled { return .some(nil) }
                    if !state.messages.isEmpty {
                        defer { state.messages = [] }
                        return .some(state.messages)
                    }
                    if state.closed { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let reader = state.withLockedValue { state in
                state.cancelled = true
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(returning: nil)
        }
        notify()
        return messages
    }

    /// Refuses every later post. Returns what was waiting and is now the caller's to answer (the
    /// reader gets nothing more); `keep` leaves it for the reader instead, which then reads it
    /// before its nil.
    @discardableResult
    func close(keep: Bool) -> [Message] {
        let (reader, left) = state.withLockedValue { state -> (CheckedContinuation<[Message]?, Never>?, [Message]) in
            state.closed = true
            let left = keep ? [] : state.messages
            if !keep { state.messages = [] }
            defer { state.reader = nil }
            // A waiting reader has nothing waiting (it would have been handed it).
            return (state.reader, left)
        }
        reader?.resume(returning: nil)
        notify()
        return left
    }

    /// How many waiting messages `matches` accepts.
    func count(where matches: (Message) -> Bool) -> Int {
        state.withLockedValue { $0.messages.count(where: matches) }
    }

    /// Calls `observer` after every change from now on.
    func observe(_ observer: @escaping @Sendable () -> Void) {
        changed.withLockedValue { $0 = observer }
    }

    private func notify() {
        changed.withLockedValue { $0 }?()
    }
}
