import NIOConcurrencyHelpers

/// Runs work against the database and answers within a time limit whether or not the work
/// ends by then.
///
/// A task group cannot do this: it waits for every child, and a PostgresNIO query already sent
/// ignores cancellation (it waits for the server's answer or the connection's end). A query on a
/// connection that gets neither would hold the caller for ever, and with it a download's run
/// loop (a checkpoint's save). Here the work runs in its own task: past the limit it is cancelled
/// and left to end by itself, and the caller goes on.
enum TimeLimit {
    /// `body`'s result, or nil once `limit` passed first. A cancelled caller gets
    /// `CancellationError` at once.
    static func run<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T?
    {
        let answer = Answer<T>()
        let work = Task { try await body() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                answer.wait(continuation)
                let timer = Task {
                    // Cancelled once the work answered: then nothing is left to time.
                    try await Task.sleep(for: limit)
                    answer.give(.success(nil))
                    work.cancel()
                }
                Task {
                    let result = await work.result
                    timer.cancel()
                    answer.give(result.map { $0 })
                }
            }
        } onCancel: {
            // Also called at once, before the operation, for a caller cancelled already.
            work.cancel()
            answer.give(.failure(CancellationError()))
        }
    }

    /// The caller's continuation, resumed by whichever answer comes first.
    private final class Answer<T: Sendable>: Sendable {
        private let state = NIOLockedValueBox<
            (waiting: CheckedContinuation<T?, any Error>?, early: Result<T?, any Error>?)
        >((nil, nil))

        func wait(_ continuation: CheckedContinuation<T?, any Error>) {
            let early = state.withLockedValue { state -> Result<T?, any Error>? in
                if let early = state.early { return early }
                state.waiting = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }

        /// The first answer wins; later ones change nothing.
        func give(_ result: Result<T?, any Error>) {
            let waiting = state.withLockedValue { state -> CheckedContinuation<T?, any Error>? in
                guard state.early == nil else { return nil }
                state.early = result
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(with: result)
        }
    }
}
