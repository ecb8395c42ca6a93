/// Group commit, once: every request waits in one line, and whatever waits when the previous
/// batch is done is carried out as one batch, so eight callers cost one transaction and one
/// fsync, not eight. Order is kept, and each caller returns only once its own request is done,
/// with its own answer. A batch that fails is carried out again request by request, so one
/// refused request (a name the store keeps for another download) fails only its caller.
///
/// The store's writes (`GroupCommit`) wait in one of these. The manager's adds wait for its
/// next add turn instead, drained by its own task group, and are answered by `answer`.
///
/// An actor, so HaulCore needs no lock: one hop per request, against a transaction per batch.
public actor BatchLine<Request: Sendable, Answer: Sendable> {
    /// Carries out a batch: one answer per request, in order.
    public typealias Perform = @Sendable ([Request]) async throws -> [Answer]

    /// A request and the caller waiting for its answer.
    public struct Waiting: Sendable {
        /// What the caller asked for.
        public var request: Request
        /// Resumed once, with the request's answer or its error.
        public var continuation: CheckedContinuation<Answer, any Error>

        /// A request and the continuation its caller awaits.
        public init(request: Request, continuation: CheckedContinuation<Answer, any Error>) {
            self.request = request
            self.continuation = continuation
        }
    }

    private var waiting: [Waiting] = []
    private var draining = false
    private let perform: Perform
    /// Told when a batch failed and is carried out request by request (how many, and why).
    private let onSplit: @Sendable (Int, any Error) -> Void

    /// A line whose batches `perform` carries out. `onSplit` hears of each failed batch of more
    /// than one request (its size and its error) before its requests are carried out one by one.
    public init(perform: @escaping Perform, onSplit: @escaping @Sendable (Int, any Error) -> Void = { _, _ in }) {
        self.perform = perform
        self.onSplit = onSplit
    }

    /// Requests waiting for the next batch.
    public var waitingCount: Int { waiting.count }

    /// Returns `request`'s answer once its batch is done; throws what its batch (or, after a
    /// failed batch, it alone) threw.
    public func submit(_ request: Request) async throws -> Answer {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
            waiting.append(Waiting(request: request, continuation: continuation))
            let start = !draining
            draining = true
            // The line is drained by a task of its own, not by the caller that found it idle:
            // that caller would otherwise also wait for every batch that queued behind its own.
            // (Being unstructured, it is never cancelled with a caller either: sqlite-nio drops
            // queued work of a cancelled task, and one caller's cancellation must not fail the
            // others' adds.)
            if start { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let batch = waiting
            waiting = []
            if batch.isEmpty {
                draining = false
                return
            }
            await Self.answer(batch, perform: perform, onSplit: onSplit)
        }
    }

    /// Carries out `batch` as one and answers each caller; when it fails, each request is
    /// carried out alone and hears its own answer. The line's own drain, and an owner that
    /// drains its batches in a loop of its own (the download manager's queue turns).
    public static func answer(
        _ batch: [Waiting], perform: Perform, onSplit: @Sendable (Int, any Error) -> Void = { _, _ in }
    ) async {
        if batch.isEmpty { return }
        do {
            let answers = try await perform(batch.map(\.request))
            guard answers.count == batch.count else {
                throw HaulError(.internal, "a batch of \(batch.count) gave \(answers.count) answers")
            }
            for (waiting, answer) in zip(batch, answers) { waiting.continuation.resume(returning: answer) }
        } catch {
            guard batch.count > 1 else {
                batch[0].continuation.resume(throwing: error)
                return
            }
            onSplit(batch.count, error)
            for waiting in batch {
                do {
                    let answers = try await perform([waiting.request])
                    guard let answer = answers.first, answers.count == 1 else {
                        throw HaulError(.internal, "a batch of 1 gave \(answers.count) answers")
                    }
                    waiting.continuation.resume(returning: answer)
                } catch {
                    waiting.continuation.resume(throwing: error)
                }
            }
        }
    }
}
