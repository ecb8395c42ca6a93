/// A throttled body's allowance: bytes earned at `rate` bytes per second as time passes, of
/// which the handler writes what it can at each tick. Working from the time that passed rather
/// than counting ticks keeps the rate accurate when timers fire late on a busy event loop; at
/// most `maxCatchUp` seconds' worth is kept, so a reader that stalled gets no long burst. Pure:
/// the handler tells it the time, so its pace is checked without waiting
/// (`ThrottleCreditTests`).
struct ThrottleCredit: Sendable {
    let rate: Double
    let maxCatchUp: Double
    let tick: Double
    private(set) var credit: Double

    /// The first tick's worth may go at once.
    init(rate: Int, tick: Double, maxCatchUp: Double) {
        self.rate = Double(rate)
        self.tick = tick
        self.maxCatchUp = maxCatchUp
        credit = Double(rate) * tick
    }

    /// Whole bytes that may be written now.
    var available: Int64 { Int64(credit) }

    /// `seconds` passed since the last tick.
    mutating func earn(_ seconds: Double) {
        let ceiling = max(rate * maxCatchUp, rate * tick, 1)
        credit = min(credit + rate * max(0, seconds), ceiling)
    }

    mutating func spend(_ bytes: Int64) {
        credit -= Double(bytes)
    }
}
