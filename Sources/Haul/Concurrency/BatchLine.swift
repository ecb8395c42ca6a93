import HaulCore

/// Group commit, written once: every request waits in the line of its key, and whatever waits
/// there when the key's previous batch is done is carried out as one batch, so eight callers
/// cost one transaction (or one fsync), not eight. Order is kept within a key, and each caller
/// returns only once its own request is done, with its own answer; keys are drained
/// independently.
///
/// Its users: the store's writes (`GroupCommit`, one key), the directory syncs of files published
/// together (`DirectorySyncs`, a key per directory), and the manager's adds (drained by the
/// manager's own turns through `answer`).
///
/// What a failed batch does is the line's `failure`: carried out again request by request, so
/// one refused request (a name the store keeps for another download) fails only its caller; or
/// every caller it was for fails with it (an fsync: one retried after a failure may report
/// success for what was lost).
public actor BatchLine<Key: Hashable & Sendable, Request: Sendable, Answer: Sendable> {
    /// Carries out a batch of one key: one answer per request, in order.
    public typealias Perform = @Sendable (Key, [Request]) async throws -> [Answer]

    /// What a failed batch of more than one request does.
    public enum Failure: Sendable {
        /// Each request is carried out again alone, and hears its own answer; told first to
        /// `onSplit` with the batch's size and error.
        case eachAlone(onSplit: @Sendable (Int, any Error) -> Void)
        /// Every request of the batch fails with its error.
        case all
    }

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

    /// One key's callers waiting for the next batch, and whether a batch of it runs.
    private struct Line {
        var waiting: [Waiting] = []
        var draining = false
    }

    private var lines: [Key: Line] = [:]
    private let perform: Perform
    private let failure: Failure
    /// Told each time a caller joins a line, so a test can wait for that instead of polling.
    private let joined: @Sendable () -> Void

    /// A line whose batches `perform` carries out; a failed batch does what `failure` says.
    public init(
        failure: Failure = .eachAlone(onSplit: { _, _ in }), joined: @escaping @Sendable () -> Void = {},
        perform: @escaping Perform
    ) {
        self.perform = perform
        self.failure = failure
        self.joined = joined
    }

    /// Requests of `key` waiting for its next batch (not the one running).
    public func waitingCount(_ key: Key) -> Int { lines[key]?.waiting.count ?? 0 }

    /// Returns `request`'s answer once its batch is done; throws what its batch (or, after a
    /// failed batch split, it alone) threw.
    public func submit(_ request: Request, to key: Key) async throws -> Answer {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
            // In place: a copy of the line taken out and put back would copy every caller
            // already waiting in it, at each join.
            let starts = lines[key]?.draining != true
            lines[key, default: Line()].waiting.append(Waiting(request: request, continuation: continuation))
            lines[key]?.draining = true
            joined()
            // The line is drained by a task of its own, not by the caller that found it idle:
            // that caller would otherwise also wait for every batch that queued behind its own.
            // (Being unstructured, it is never cancelled with a caller either: sqlite-nio drops
            // queued work of a cancelled task, and one caller's cancellation must not fail the
            // others' requests.)
            if starts { Task { await self.drain(key) } }
        }
    }

    /// Batch after batch of `key`, until nobody waits; then the key's line goes.
    private func drain(_ key: Key) async {
        while let batch = lines[key]?.waiting, !batch.isEmpty {
            lines[key]?.waiting = []
            await Self.answer(batch, perform: { try await self.perform(key, $0) }, failure: failure)
        }
        lines[key] = nil
    }

    /// Carries out `batch` as one and answers each caller; a failure does what `failure` says.
    /// The line's own drain, and an owner that drains its batches in a loop of its own (the
    /// download manager's queue turns).
    public static func answer(
        _ batch: [Waiting], perform: @Sendable ([Request]) async throws -> [Answer], failure: Failure
    ) async {
        guard !batch.isEmpty else { return }
        do {
            let answers = try await perform(batch.map(\.request))
            guard answers.count == batch.count else {
                throw HaulError(.internal, "a batch of \(batch.count) gave \(answers.count) answers")
            }
            for (waiting, answer) in zip(batch, answers) { waiting.continuation.resume(returning: answer) }
        } catch {
            guard batch.count > 1, case .eachAlone(let onSplit) = failure else {
                for waiting in batch { waiting.continuation.resume(throwing: error) }
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
