import HaulCore

/// Adds that are followed to their ends: what `haul get` consumes, one stream per batch, with
/// nothing about a download before the add has returned it. A reader of the manager, beside
/// its hubs (`Broadcast.swift`): the stream's producer is a task of the reader's stream, ended
/// with it, not work of the manager's.
extension DownloadManager {
    /// What a followed batch of adds yields.
    public enum Followed: Sendable {
        /// The batch is committed: one record per request, in order (`add(_:)`'s answer).
        case added([DownloadRecord])
        /// Progress and state changes of one of them, for display (may drop old ones when read
        /// slowly, as `events()`).
        case event(DownloadEvent)
        /// One of them left this process's schedule: its one outcome, never dropped.
        case outcome(DownloadOutcome)
    }

    /// Adds these downloads (as `add(_:)`) and follows them: the stream yields `.added` once
    /// they are committed, then their events and each one's first outcome; nothing about a
    /// download comes before its `.added`. (Events and outcomes come from two hubs: a
    /// download's last event may come just after its outcome; a reader drops it.) It ends once
    /// every one has its outcome, or when the manager shuts down (those still running or queued
    /// then have none), and throws what the add threw.
    public nonisolated func addFollowing(
        _ requests: [DownloadRequest], groups: [DownloadQueue.GroupAsk] = []
    ) -> AsyncThrowingStream<Followed, any Error> {
        let ids = FollowedIDs()
        // Subscribed before the add decides any id: what is published meanwhile waits in them.
        let outcomes = outcomeHub.stream(.followed(ids))
        let events = hub.stream(.followed(ids))
        let (stream, continuation) = AsyncThrowingStream<Followed, any Error>.makeStream()
        let follower = Task {
            let records: [DownloadRecord]
            do {
                records = try await add(
                    requests, placements: requests.map { _ in AddPlacement() }, following: ids, groups: groups)
            } catch {
                continuation.finish(throwing: error)
                return
            }
            continuation.yield(.added(records))
            var pending = Set(records.map(\.id))
            if pending.isEmpty {
                continuation.finish()
                return
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events { continuation.yield(.event(event)) }
                }
                for await outcome in outcomes where !pending.isEmpty {
                    guard pending.remove(outcome.id) != nil else { continue }
                    continuation.yield(.outcome(outcome))
                    if pending.isEmpty { break }
                }
                group.cancelAll()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in follower.cancel() }
        return stream
    }
}
