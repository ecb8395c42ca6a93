import HaulCore
import NIOConcurrencyHelpers

/// A bandwidth limit shared by any number of concurrent connections (one download's limit) or
/// downloads (the global limit), on the injected clock.
///
/// Backpressure, not buffering: a connection awaits ``acquire(_:)`` for the bytes it has just
/// received before it reads the next chunk from the socket, so data never piles up in memory;
/// the socket's receive window slows the server down.
///
/// Bytes are reserved in the order `acquire` is called (debt is allowed, so a large chunk is
/// delayed, never refused), which gives N connections taking turns about 1/N of the rate each.
/// A rate change reaches the waiters already asleep: each wakes and waits again for what is
/// still owed under the new rate (or not at all with no limit).
public final class RateLimiter: Sendable {
    private struct Ticket {
        /// The bucket the bytes were taken from.
        var epoch: UInt64
        /// The rate generation the wait was computed under.
        var generation: UInt64
        /// The bytes' cumulative place in the bucket.
        var position: Int64
        var wait: Double
    }

    private enum Waker {
        /// Registered; the continuation is not stored yet.
        case pending
        /// Cancelled before the continuation was stored.
        case cancelled
        case waiting(CheckedContinuation<Void, Never>)
    }

    private struct State {
        var rate: ByteRate?
        var bucket: TokenBucket?
        /// Bumped whenever `bucket` is replaced (limit removed or set anew), which makes the
        /// places taken in the old one meaningless.
        var epoch: UInt64 = 0
        /// Bumped by every rate change or refund, to wake the sleepers.
        var generation: UInt64 = 0
        var nextWakerID: UInt64 = 0
        var wakers: [UInt64: Waker] = [:]
    }

    /// Waits shorter than this count as done: they are rounding, not rate limiting.
    private static let slack = 1e-7
    /// The longest single sleep; a longer wait sleeps again (it also keeps the conversion to
    /// `Duration` in range).
    private static let longestSleep = 86_400.0

    private let clock: any HaulClock
    private let state: NIOLockedValueBox<State>

    /// `rate` nil: unlimited.
    public init(rate: ByteRate?, clock: any HaulClock) {
        self.clock = clock
        var initial = State(rate: rate)
        if let rate {
            initial.bucket = TokenBucket(rate: rate.bytesPerSecond, now: clock.seconds())
        }
        self.state = NIOLockedValueBox(initial)
    }

    /// The current limit; nil when unlimited.
    public var rate: ByteRate? {
        state.withLockedValue { $0.rate }
    }

    /// Changes the limit (nil removes it) for the bytes still owed too: connections asleep in
    /// ``acquire(_:)`` wake at once and wait only for what they owe under the new rate.
    public func setRate(_ rate: ByteRate?) {
        let woken: [CheckedContinuation<Void, Never>] = state.withLockedValue { state in
            guard state.rate != rate else { return [] }
            state.rate = rate
            if let rate {
                if state.bucket == nil {
                    state.bucket = TokenBucket(rate: rate.bytesPerSecond, now: clock.seconds())
                    state.epoch += 1
                } else {
                    state.bucket!.setRate(rate.bytesPerSecond, now: clock.seconds())
                }
            } else if state.bucket != nil {
                state.bucket = nil
                state.epoch += 1
            }
            return Self.wakeAll(&state)
        }
        for continuation in woken {
            continuation.resume()
        }
    }

    /// Returns once `bytes` may be used under the limit: at once when unlimited or when the
    /// bucket has the tokens, otherwise after sleeping on the clock. Throws `CancellationError`
    /// promptly if the task is cancelled while waiting (the bytes are given back, so the
    /// connections behind it do not wait for them).
    public func acquire(_ bytes: Int) async throws {
        guard bytes > 0 else { return }
        var ticket: Ticket? = state.withLockedValue { state in
            guard state.bucket != nil else { return nil }
            let wait = state.bucket!.take(Int64(bytes), now: clock.seconds())
            guard wait > Self.slack else { return nil }
            return Ticket(epoch: state.epoch, generation: state.generation, position: state.bucket!.taken, wait: wait)
        }
        while let current = ticket {
            do {
                try await sleep(seconds: current.wait, unlessRateChangesFrom: current.generation)
            } catch {
                // Give the bytes back; the waiters behind come due sooner, so they recompute.
                let woken: [CheckedContinuation<Void, Never>] = state.withLockedValue { state in
                    guard state.epoch == current.epoch, state.bucket != nil else { return [] }
                    state.bucket!.refund(Int64(bytes), now: clock.seconds())
                    return Self.wakeAll(&state)
                }
                for continuation in woken {
                    continuation.resume()
                }
                throw error
            }
            ticket = state.withLockedValue { state in
                guard state.epoch == current.epoch, let bucket = state.bucket else { return nil }
                let wait = bucket.delay(untilTaken: current.position, now: clock.seconds())
                guard wait > Self.slack else { return nil }
                return Ticket(
                    epoch: current.epoch, generation: state.generation, position: current.position, wait: wait)
            }
        }
    }

    /// Acquires `bytes` from each limiter in turn (say a download's own limit, then the global
    /// one); nil entries and unlimited limiters cost nothing.
    public static func acquire(_ bytes: Int, from limiters: [RateLimiter?]) async throws {
        for limiter in limiters {
            try await limiter?.acquire(bytes)
        }
    }

    // MARK: - Private

    /// Starts a new generation and returns the sleepers to wake (outside the lock), so that each
    /// recomputes its wait.
    private static func wakeAll(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.generation += 1
        var woken: [CheckedContinuation<Void, Never>] = []
        for (id, waker) in state.wakers {
            if case .waiting(let continuation) = waker {
                woken.append(continuation)
                state.wakers[id] = nil
            }
        }
        return woken
    }

    /// Sleeps on the clock for `seconds`, returning early if the rate changes (or has changed
    /// since `generation`); throws `CancellationError` if the task is cancelled.
    private func sleep(seconds: Double, unlessRateChangesFrom generation: UInt64) async throws {
        let nanoseconds = (min(seconds, Self.longestSleep) * 1e9).rounded(.up)
        let duration = Duration.nanoseconds(Int64(nanoseconds))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.clock.sleep(for: duration) }
            group.addTask { await self.waitForRateChange(after: generation) }
            try await group.next()
            group.cancelAll()
        }
        try Task.checkCancellation()
    }

    /// Returns when the rate generation moves past `generation` or the task is cancelled.
    private func waitForRateChange(after generation: UInt64) async {
        let id = state.withLockedValue { state in
            state.nextWakerID += 1
            state.wakers[state.nextWakerID] = .pending
            return state.nextWakerID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = state.withLockedValue { state in
                    if case .cancelled = state.wakers[id] {
                        state.wakers[id] = nil
                        return true
                    }
                    if state.generation != generation {
                        state.wakers[id] = nil
                        return true
                    }
                    state.wakers[id] = .waiting(continuation)
                    return false
                }
                if resumeNow {
                    continuation.resume()
                }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, Never>? = state.withLockedValue { state in
                switch state.wakers[id] {
                case .pending:
                    state.wakers[id] = .cancelled
                    return nil
                case .waiting(let continuation):
                    state.wakers[id] = nil
                    return continuation
                case .cancelled, nil:
                    return nil
                }
            }
            continuation?.resume()
        }
    }
}
