import Haul
import HaulCore
import Logging
import NIOConcurrencyHelpers
import UnixSignals

/// The one loop of `haul get`: what it hears about (adds, events, ticks, names, signals), how
/// it feeds the display, and the outcome that decides the exit status.
extension GetCommand {
    /// What the command's one loop hears about.
    enum Input: Sendable {
        /// One batch of adds, and what follows it (`DownloadManager.addFollowing`).
        case followed(DownloadManager.Followed)
        case rejected(url: String?, HaulError)
        /// Every batch is added and followed to its end (or the manager shut down).
        case addingDone
        case tick
        /// File names read for the display (`Reporter.namesWanted`).
        case named([DownloadID: String], asked: [DownloadID])
        case signal
    }

    /// Adds the URLs a thousand at a time, each batch followed to its downloads' outcomes
    /// (never dropped): nothing about a download arrives before its batch is added. Events and
    /// ticks only feed the display. Ctrl-C or SIGTERM checkpoints everything, and every waiting
    /// download then counts as interrupted.
    func drive(
        _ manager: DownloadManager, entries: [Entry], groups: [DownloadQueue.GroupAsk], template: RequestTemplate,
        reporter: Reporter
    ) async -> Outcome {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let (inputs, post) = AsyncStream<Input>.makeStream()
        let interval = Duration.milliseconds(Int64(reporter.drawInterval * 1000))
        let stopAdding = NIOLockedValueBox(false)
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: interval)
                    } catch {
                        break // only cancellation throws: the loop has ended and wants no tick
                    }
                    post.yield(.tick)
                }
            }
            group.addTask {
                for await _ in signals { post.yield(.signal) }
            }
            group.addTask {
                await add(entries, groups: groups, template: template, to: manager, until: stopAdding, post: post)
                post.yield(.addingDone)
            }

            var outcome = Outcome()
            var waiting: Set<DownloadID> = []
            loop: for await input in inputs {
                switch input {
                case .followed(.added(let records)):
                    for record in records { reporter.added(record) }
                    waiting.formUnion(records.map(\.id))
                case .followed(.event(let event)):
                    // Late progress of a download already settled is dropped.
                    if !event.isFinal, waiting.contains(event.id) { reporter.handle(event) }
                case .followed(.outcome(let settled)):
                    if waiting.remove(settled.id) != nil {
                        outcome.note(settled)
                        reporter.settled(settled)
                    }
                case .rejected(let url, let error):
                    outcome.failures.append(error)
                    reporter.rejected(url: url, error)
                case .addingDone:
                    // Every batch was followed to its end: one still waiting was cut off by a shutdown.
                    outcome.interrupted = outcome.interrupted || !waiting.isEmpty
                    break loop
                case .tick:
                    reporter.tick(manager.liveProgress())
                    let wanted = reporter.namesWanted()
                    if !wanted.isEmpty {
                        // Read beside the loop, in its group: a busy store must not hold up the display.
                        group.addTask {
                            let records: [DownloadRecord]
                            do {
                                records = try await manager.records(wanted)
                            } catch {
                                // Only names for the display: asked for again at the next tick.
                                await manager.configuration.logger.debug(
                                    "cannot read downloads' names", metadata: ["error": "\(error)"])
                                records = []
                            }
                            let found = records.reduce(into: [DownloadID: String]()) { $0[$1.id] = $1.fileName }
                            post.yield(.named(found, asked: wanted))
                        }
                    }
                case .named(let found, let asked):
                    reporter.named(found, asked: asked)
                case .signal:
                    outcome.interrupted = true
                    stopAdding.withLockedValue { $0 = true }
                    // Every running download checkpoints; the batches' streams then end (the group
                    // waits for the shutdown before it returns).
                    group.addTask { await manager.shutdown() }
                }
            }
            group.cancelAll()
            reporter.finish()
            return outcome
        }
    }

    struct Outcome {
        var failures: [HaulError] = []
        var interrupted = false

        mutating func note(_ outcome: DownloadOutcome) {
            if let failure = outcome.failure {
                failures.append(failure)
            } else if outcome.status != .completed {
                interrupted = true
            }
        }

        /// The first failure decides the status; an interruption wins over everything.
        var status: Int32? {
            if interrupted { return ExitCodes.interrupted }
            return failures.first.map(ExitCodes.code(for:))
        }
    }
}
