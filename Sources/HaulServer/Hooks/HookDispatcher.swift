import AsyncHTTPClient
import Haul
import HaulCore
import Logging
import NIOConcurrencyHelpers

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Runs the daemon's hooks from the manager's outcomes, which are never dropped (as
/// `DaemonMetrics` counts them): a completed download (not one found complete when added again)
/// runs `--on-complete` and sends the webhook a `completed` event; a failed one runs
/// `--on-error` and sends a `failed` event. Pauses, removals and shutdowns run nothing.
///
/// Reading the outcomes never waits for a hook: each hook has its own queue (at most
/// `queueLimit` waiting, the oldest dropped with a log line past that) and its own task, which
/// runs one job at a time. So a command that hangs (until its timeout) or a receiver that is
/// down delays only its own later jobs.
final class HookDispatcher: Sendable {
    struct Job: Sendable {
        var id: DownloadID
        var path: String
    }

    struct Delivery: Sendable {
        var id: DownloadID
        var type: String
        var body: Data
    }

    private let hooks: DaemonHooks
    private let webhook: Webhook?
    private let logger: Logger
    private let completions: (stream: AsyncStream<Job>, continuation: AsyncStream<Job>.Continuation)
    private let errors: (stream: AsyncStream<Job>, continuation: AsyncStream<Job>.Continuation)
    private let deliveries: (stream: AsyncStream<Delivery>, continuation: AsyncStream<Delivery>.Continuation)
    private let droppedCount = NIOLockedValueBox(0)

    /// Jobs dropped so far because their hook's queue was full.
    var dropped: Int { droppedCount.withLockedValue { $0 } }

    init(hooks: DaemonHooks, client: HTTPClient = .shared, clock: any HaulClock, logger: Logger) {
        self.hooks = hooks
        self.logger = logger
        webhook = hooks.webhook.map { Webhook(target: $0, client: client, clock: clock, logger: logger) }
        let limit = max(hooks.queueLimit, 1)
        completions = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingNewest(limit))
        errors = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingNewest(limit))
        deliveries = AsyncStream.makeStream(of: Delivery.self, bufferingPolicy: .bufferingNewest(limit))
    }

    /// Until the outcomes end (the manager's shutdown) and the queued jobs are done, or until
    /// cancelled.
    func observe(outcomes: AsyncStream<DownloadOutcome>) async {
        await withTaskGroup(of: Void.self) { group in
            let (hooks, logger, webhook) = (hooks, logger, webhook)
            if let command = hooks.onComplete {
                let jobs = completions.stream
                group.addTask {
                    for await job in jobs { await command.run(id: job.id, path: job.path, logger: logger) }
                }
            }
            if let command = hooks.onError {
                let jobs = errors.stream
                group.addTask {
                    for await job in jobs { await command.run(id: job.id, path: job.path, logger: logger) }
                }
            }
            if let webhook {
                let jobs = deliveries.stream
                group.addTask { for await job in jobs { await webhook.deliver(job.body, type: job.type, id: job.id) } }
            }
            for await outcome in outcomes { note(outcome) }
            completions.continuation.finish()
            errors.continuation.finish()
            deliveries.continuation.finish()
        }
    }

    /// Queues what `outcome` calls for; returns at once.
    func note(_ outcome: DownloadOutcome) {
        let path = outcome.record?.finalPath ?? ""
        switch outcome.status {
        case .completed where !outcome.alreadyComplete:
            if hooks.onComplete != nil {
                queue(Job(id: outcome.id, path: path), on: completions.continuation, hook: "--on-complete")
            }
        case .failed:
            if hooks.onError != nil {
                queue(Job(id: outcome.id, path: path), on: errors.continuation, hook: "--on-error")
            }
        default:
            return
        }
        guard webhook != nil else { return }
        do {
            guard let body = try Webhook.body(for: outcome) else { return }
            let type = outcome.status == .completed ? "completed" : "failed"
            queue(Delivery(id: outcome.id, type: type, body: body), on: deliveries.continuation, hook: "--webhook")
        } catch {
            logger.error("cannot encode the webhook event: \(error)", metadata: ["id": "\(outcome.id)"])
        }
    }

    private func queue<Item: Sendable>(_ item: Item, on continuation: AsyncStream<Item>.Continuation, hook: String) {
        if case .dropped = continuation.yield(item) {
            droppedCount.withLockedValue { $0 += 1 }
            logger.warning(
                "\(hook) is behind: its oldest waiting event was dropped", metadata: ["limit": "\(hooks.queueLimit)"])
        }
    }
}
