import HaulCore
import NIOConcurrencyHelpers

/// Something about one download.
protocol AboutOneDownload: Sendable {
    var id: DownloadID { get }
}

extension DownloadEvent: AboutOneDownload {}
extension DownloadOutcome: AboutOneDownload {}

/// Progress and state changes: each subscriber keeps at most 4,096, dropping the oldest, so a
/// reader that falls behind loses old progress, not the latest state. For display only.
typealias EventHub = Broadcast<DownloadEvent>

/// Outcomes: one per download leaving the schedule, never dropped (see `DownloadOutcome`).
typealias OutcomeHub = Broadcast<DownloadOutcome>

extension Broadcast where Element == DownloadEvent {
    convenience init() { self.init(bufferLimit: 4096) }
}

extension Broadcast where Element == DownloadOutcome {
    convenience init() { self.init(bufferLimit: nil) }
}

/// Fans values out to every subscriber. Runners publish synchronously from their own tasks, so
/// this is a lock, not an actor. With a `bufferLimit`, a subscriber that falls behind loses the
/// oldest values; without one, it keeps everything until it reads it.
final class Broadcast<Element: AboutOneDownload>: Sendable {
    private struct Subscriber {
        var filter: Filter
        var continuation: AsyncStream<Element>.Continuation
    }

    /// Which downloads a subscriber hears about.
    enum Filter: Sendable {
        case all
        case one(DownloadID)
        /// Those of a batch of adds, as the add decides them (`FollowedIDs`).
        case followed(FollowedIDs)

        func matches(_ id: DownloadID) -> Bool {
            switch self {
            case .all: true
            case .one(let one): one == id
            case .followed(let ids): ids.contains(id)
            }
        }
    }

    private struct State {
        var finished = false
        var next = 0
        var subscribers: [Int: Subscriber] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let bufferLimit: Int?

    init(bufferLimit: Int?) {
        self.bufferLimit = bufferLimit
    }

    func publish(_ value: Element) {
        let targets = state.withLockedValue { $0.subscribers.values.filter { $0.filter.matches(value.id) } }
        for target in targets { target.continuation.yield(value) }
    }

    /// Every value from now on, or only one download's.
    func stream(filter id: DownloadID? = nil) -> AsyncStream<Element> {
        stream(id.map(Filter.one) ?? .all)
    }

    /// The values of the downloads `filter` lets through, from now on.
    func stream(_ filter: Filter) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(
            bufferingPolicy: bufferLimit.map { .bufferingNewest($0) } ?? .unbounded)
        let key = state.withLockedValue { state -> Int? in
            guard !state.finished else { return nil }
            defer { state.next += 1 }
            state.subscribers[state.next] = Subscriber(filter: filter, continuation: continuation)
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

/// The downloads one batch of adds is about, filled in by the add as it decides each one, before
/// anything about it can be published (`DownloadManager.addFollowing`).
final class FollowedIDs: Sendable {
    private let ids = NIOLockedValueBox(Set<DownloadID>())

    func insert(_ id: DownloadID) {
        _ = ids.withLockedValue { $0.insert(id) }
    }

    func contains(_ id: DownloadID) -> Bool {
        ids.withLockedValue { $0.contains(id) }
    }
}
