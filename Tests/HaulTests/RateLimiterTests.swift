import Haul
import HaulCore
import HaulTesting
import Testing

/// Everything on a ManualClock: waits are asserted as the exact instants the limiter sleeps
/// until, and time only moves when a test advances it.
@Suite(.timeLimit(.minutes(1))) struct RateLimiterTests {
    private static let kib = 1024

    private func limiter(_ bytesPerSecond: Int64?, _ clock: ManualClock) -> RateLimiter {
        RateLimiter(rate: bytesPerSecond.map { ByteRate(bytesPerSecond: $0) }, clock: ClockAdapter(clock))
    }

    /// Acquires `bytes` in a task of its own; its value is the simulated instant it got them.
    private func acquiring(_ bytes: Int, from limiter: RateLimiter, _ clock: ManualClock) -> Task<
        ManualClock.Instant, any Error
    > {
        Task {
            try await limiter.acquire(bytes)
            return clock.now
        }
    }

    private func at(_ seconds: Double) -> ManualClock.Instant {
        ManualClock.Instant(offset: .nanoseconds(Int64(seconds * 1e9)))
    }

    @Test func acquireWaitsTheSimulatedTimeTheBytesCost() async throws {
        let clock = ManualClock()
        let limiter = limiter(16_384, clock)
        #expect(limiter.rate == ByteRate(bytesPerSecond: 16_384))
        try await limiter.acquire(16 * Self.kib)
        #expect(clock.sleepers.isEmpty, "the burst is there at once")

        let task = acquiring(8 * Self.kib, from: limiter, clock)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(0.5)])
        clock.advance(by: .milliseconds(499))
        #expect(clock.sleepers == [at(0.5)])
        clock.advance(by: .milliseconds(1))
        #expect(try await task.value == at(0.5))

        // A chunk far larger than the burst is delayed, not refused: 64 KiB at 16 KiB/s is 4 s.
        let large = acquiring(64 * Self.kib, from: limiter, clock)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(4.5)])
        clock.advance(by: .seconds(4))
        #expect(try await large.value == at(4.5))
    }

    @Test func raisingTheRateWakesASleeperWhichWaitsOnlyForWhatItStillOwes() async throws {
        let clock = ManualClock()
        let limiter = limiter(1024, clock)
        try await limiter.acquire(16 * Self.kib)
        let task = acquiring(60 * Self.kib, from: limiter, clock)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(60)])
        clock.advance(by: .seconds(4))

        // 56 KiB still owed at 4 s; at 28 KiB/s that is 2 s more.
        limiter.setRate(ByteRate(bytesPerSecond: 28 * 1024))
        #expect(limiter.rate == ByteRate(bytesPerSecond: 28 * 1024))
        #expect(await clock.waitForSleepers { $0 == [at(6)] })
        clock.advance(by: .seconds(2))
        #expect(try await task.value == at(6))
    }

    @Test func loweringTheRateMakesASleeperWaitLonger() async throws {
        let clock = ManualClock()
        let limiter = limiter(16_384, clock)
        try await limiter.acquire(16 * Self.kib)
        let task = acquiring(32 * Self.kib, from: limiter, clock)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(2)])
        clock.advance(by: .seconds(1))
        // 16 KiB still owed at 1 s; at 4 KiB/s that is 4 s more.
        limiter.setRate(ByteRate(bytesPerSecond: 4096))
        #expect(await clock.waitForSleepers { $0 == [at(5)] })
        clock.advance(by: .seconds(4))
        #expect(try await task.value == at(5))
    }

    @Test func removingTheLimitWakesASleeperAtOnce() async throws {
        let clock = ManualClock()
        let limiter = limiter(1, clock)
        try await limiter.acquire(16 * Self.kib)
        let task = acquiring(1 << 30, from: limiter, clock)
        await clock.waitForSleepers(count: 1)
        limiter.setRate(nil)
        #expect(limiter.rate == nil)
        #expect(try await task.value == at(0), "released without the clock moving")
        #expect(clock.sleepers.isEmpty)

        // A limit set anew starts with a full bucket.
        limiter.setRate(ByteRate(bytesPerSecond: 16_384))
        try await limiter.acquire(16 * Self.kib)
        #expect(clock.sleepers.isEmpty)
    }

    @Test func cancellationThrowsPromptlyAndGivesTheBytesBack() async throws {
        let clock = ManualClock()
        let limiter = limiter(16_384, clock)
        try await limiter.acquire(16 * Self.kib)
        let cancelled = Task { try await limiter.acquire(32 * Self.kib) }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(2)])
        let behind = acquiring(16 * Self.kib, from: limiter, clock)
        await clock.waitForSleepers(count: 2)
        #expect(clock.sleepers == [at(2), at(3)])

        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        // The one behind no longer waits for the cancelled 32 KiB.
        #expect(await clock.waitForSleepers { $0 == [at(1)] })
        clock.advance(by: .seconds(1))
        #expect(try await behind.value == at(1))
    }

    @Test func unlimitedNeverSleeps() async throws {
        let clock = ManualClock()
        let unlimited = limiter(nil, clock)
        #expect(unlimited.rate == nil)
        for _ in 0..<100 {
            try await unlimited.acquire(1 << 40)
        }
        try await RateLimiter.acquire(1 << 40, from: [nil, unlimited])
        // Nothing to wait for, so even a cancelled task goes straight through.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await unlimited.acquire(1 << 20)
        }
        try await cancelled.value
        // Under a limit, nothing and what the burst covers do not sleep either.
        let limited = limiter(16_384, clock)
        try await limited.acquire(0)
        try await limited.acquire(16 * Self.kib)
        #expect(clock.sleepers.isEmpty)
        #expect(clock.now == at(0))
    }

    /// When each connection got its bytes.
    private final class Log: Sendable {
        struct Entry {
            var connection: Int
            var time: ManualClock.Instant
        }
        let entries = Watched<[Entry]>([])
        func append(_ connection: Int, _ time: ManualClock.Instant) {
            entries.withLockedValue { $0.append(Entry(connection: connection, time: time)) }
        }
        func times(of connection: Int) -> [ManualClock.Instant] {
            entries.value.filter { $0.connection == connection }.map(\.time)
        }
    }

    @Test func concurrentAcquirersTakeTurns() async throws {
        let clock = ManualClock()
        let limiter = limiter(16_384, clock)
        let log = Log()
        try await limiter.acquire(16 * Self.kib)
        @Sendable func connection(_ number: Int) async throws {
            for _ in 0..<4 {
                try await limiter.acquire(16 * Self.kib)
                log.append(number, clock.now)
            }
        }
        let first = Task { try await connection(1) }
        let second = Task { try await connection(2) }
        // One 16 KiB chunk per second, handed out in turn: at t the next two are queued.
        for t in 0..<8 {
            #expect(await log.entries.wait { $0.count >= t })
            let expected = [at(Double(t + 1)), at(Double(t + 2))].filter { $0 <= at(8) }
            await clock.waitForSleepers(count: expected.count)
            #expect(clock.sleepers == expected)
            clock.advance(by: .seconds(1))
        }
        try await first.value
        try await second.value
        let times = [log.times(of: 1), log.times(of: 2)].sorted { $0[0] < $1[0] }
        #expect(times == [[at(1), at(3), at(5), at(7)], [at(2), at(4), at(6), at(8)]])
    }

    @Test func acquiringFromSeveralLimitersWaitsForEachInTurn() async throws {
        let clock = ManualClock()
        let download = limiter(16_384, clock)
        let global = limiter(32_768, clock)
        let task = Task {
            try await RateLimiter.acquire(32 * Self.kib, from: [download, global])
            return clock.now
        }
        // The download's own limit first: 16 KiB beyond its burst is 1 s.
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [at(1)])
        clock.advance(by: .seconds(1))
        // Then the global one: 16 KiB beyond its burst at 32 KiB/s is 0.5 s.
        #expect(await clock.waitForSleepers { $0 == [at(1.5)] })
        clock.advance(by: .milliseconds(500))
        #expect(try await task.value == at(1.5))
    }
}
