import HaulCore

/// The engine's access to time: monotonic readings and sleeps, and the calendar. Injected, so
/// that everything the engine times can be driven by a manual clock in tests: retry delays,
/// checkpoint cadence, the server's dates (an HTTP-date `Retry-After`), the run's ticker
/// (speeds, progress, periodic checkpoints), a fleet host's renewals and claims, and the
/// shutdown's deadline. In production it is `ContinuousClock`: a lease is a promise to other
/// hosts, and the clock that keeps it is the real one; its expiry is the database's `now()`
/// anyway. A test on a manual clock advances it to make time pass, past a shutdown's deadline
/// too (nothing waits on real time behind its back).
public protocol HaulClock: Sendable {
    /// Monotonic time in seconds on an arbitrary scale.
    func seconds() -> Double
    /// Returns once `duration` has passed on this clock; throws when the waiting task is
    /// cancelled first.
    func sleep(for duration: Duration) async throws
    /// Calendar time in microseconds since 1970, for record timestamps, queue positions and the
    /// server's dates; never for measuring intervals.
    func microsecondsSince1970() -> Int64
}

extension HaulClock {
    /// Calendar time in whole seconds since 1970.
    public func secondsSince1970() -> Int64 {
        microsecondsSince1970() / 1_000_000
    }
}

/// Adapts any `Clock` (`ContinuousClock`, a test's manual clock) to `HaulClock`.
public struct ClockAdapter<C: Clock>: HaulClock where C.Duration == Duration {
    /// The clock adapted: its readings and sleeps are the adapter's.
    public let clock: C
    private let origin: C.Instant
    /// The calendar time at `origin`, in microseconds since 1970; nil: the system's calendar.
    private let calendarOrigin: Int64?

    /// `secondsSince1970`: the calendar time the clock starts at, which then moves with it (a
    /// test's manual clock); nil: the system's calendar time, whatever the clock.
    public init(_ clock: C, secondsSince1970: Int64? = nil) {
        self.clock = clock
        self.origin = clock.now
        self.calendarOrigin = secondsSince1970.map { $0 * 1_000_000 }
    }

    /// Seconds passed on `clock` since the adapter was made.
    public func seconds() -> Double {
        origin.duration(to: clock.now).seconds
    }

    /// Sleeps on `clock` until `duration` from now; throws what its sleep throws
    /// (`CancellationError` when the task is cancelled).
    public func sleep(for duration: Duration) async throws {
        try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
    }

    /// The calendar time given at `init`, moved on by what `clock` has passed since; without one,
    /// the system's calendar time.
    public func microsecondsSince1970() -> Int64 {
        guard let calendarOrigin else { return WallClock.microsecondsSince1970() }
        let elapsed = origin.duration(to: clock.now).components
        return calendarOrigin + elapsed.seconds * 1_000_000 + elapsed.attoseconds / 1_000_000_000_000
    }
}
