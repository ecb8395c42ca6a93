import HaulCore

/// The engine's only access to time: monotonic readings and sleeps. Injected, so that retry
/// delays and checkpoint cadence can be driven by a manual clock in tests.
public protocol HaulClock: Sendable {
    /// Monotonic time in seconds on an arbitrary scale.
    func seconds() -> Double
    func sleep(for duration: Duration) async throws
}

/// Adapts any `Clock` (`ContinuousClock`, a test's manual clock) to `HaulClock`.
public struct ClockAdapter<C: Clock>: HaulClock where C.Duration == Duration {
    public let clock: C
    private let origin: C.Instant

    public init(_ clock: C) {
        self.clock = clock
        self.origin = clock.now
    }

    public func seconds() -> Double {
        origin.duration(to: clock.now).seconds
    }

    public func sleep(for duration: Duration) async throws {
        try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
    }
}
