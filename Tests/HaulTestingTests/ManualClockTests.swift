import HaulTesting
import Testing

@Suite(.timeLimit(.minutes(2))) struct ManualClockTests {
    @Test func sleepersWakeOnlyWhenTheClockReachesTheirDeadline() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)) }

        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepers == [ManualClock.Instant(offset: .seconds(5))])

        clock.advance(by: .seconds(4))
        #expect(clock.sleepers.count == 1)
        #expect(clock.now.offset == .seconds(4))

        clock.advance(by: .seconds(1))
        try await task.value
        #expect(clock.sleepers.isEmpty)
        #expect(clock.now == ManualClock.Instant(offset: .seconds(5)))
    }

    @Test func advanceWakesOnlyDueSleepers() async throws {
        let clock = ManualClock()
        let short = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(1)), tolerance: nil) }
        let long = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(10)), tolerance: nil) }
        await clock.waitForSleepers(count: 2)
        #expect(clock.sleepers.map(\.offset) == [.seconds(1), .seconds(10)])

        clock.advance(by: .seconds(2))
        try await short.value
        #expect(clock.sleepers.map(\.offset) == [.seconds(10)])

        clock.advance(by: .seconds(8))
        try await long.value
        #expect(clock.sleepers.isEmpty)
    }

    @Test func sleepingUntilThePastReturnsImmediately() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(3))
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(2)), tolerance: nil)
        try await clock.sleep(for: .zero)
        #expect(clock.sleepers.isEmpty)
    }

    @Test func cancellationThrowsAndRemovesTheSleeper() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleepers.isEmpty)

        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
    }

    @Test func measuresElapsedTimeWithClockAPIs() {
        let clock = ManualClock()
        let start = clock.now
        clock.advance(by: .milliseconds(1_500))
        #expect(start.duration(to: clock.now) == .milliseconds(1_500))
        #expect(clock.minimumResolution == .zero)
    }
}
