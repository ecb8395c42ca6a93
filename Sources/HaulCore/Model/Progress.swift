/// A snapshot for progress displays: bytes, speed and time left.
public struct Progress: Hashable, Codable, Sendable {
    /// Bytes of the download on disk so far.
    public var completed: Int64
    /// Bytes the download will have, once known.
    public var total: Int64?
    /// The smoothed transfer speed (`SpeedMeter`), in bytes per second; 0 before there is a rate.
    public var bytesPerSecond: Double
    /// Connections transferring right now.
    public var connections: Int

    /// A snapshot of `completed` of `total` bytes (nil when not known yet) at `bytesPerSecond`, over
    /// `connections` connections.
    public init(completed: Int64, total: Int64?, bytesPerSecond: Double, connections: Int = 1) {
        self.completed = completed
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.connections = connections
    }

    /// 0...1, when the total is known.
    public var fraction: Double? {
        guard let total, total > 0 else { return total == 0 ? 1 : nil }
        return min(1, Double(completed) / Double(total))
    }

    /// Seconds left at the current speed, when both are known.
    public var secondsRemaining: Double? {
        guard let total, bytesPerSecond > 0 else { return nil }
        return Double(max(0, total - completed)) / bytesPerSecond
    }
}

/// Smoothed transfer speed: an exponential moving average of the rate between samples, so the
/// figure neither jumps with every chunk nor lags a change for long. Time comes in from the
/// caller, in seconds on any monotonic scale.
public struct SpeedMeter: Sendable {
    /// Seconds after which a sample's weight halves (2 by default: one second keeps about 0.7 of the
    /// history).
    public var halfLife: Double
    /// The smoothed speed in bytes per second; 0 until two samples are recorded.
    public private(set) var bytesPerSecond: Double = 0
    private var last: (time: Double, bytes: Int64)?

    /// A meter with no samples yet, whose history loses half its weight every `halfLife` seconds.
    public init(halfLife: Double = 2) { self.halfLife = halfLife }

    /// Adds a sample: the download's byte count `bytes` at `time` (seconds). The first sample only sets
    /// the starting point; one no later than the previous sample is ignored, and a count that went down
    /// counts as no progress.
    public mutating func record(bytes: Int64, at time: Double) {
        guard let last else {
            self.last = (time, bytes)
            return
        }
        let elapsed = time - last.time
        guard elapsed > 0 else { return }
        let rate = Double(max(0, bytes - last.bytes)) / elapsed
        if bytesPerSecond == 0 {
            bytesPerSecond = rate
        } else {
            let keep = pow2(-elapsed / halfLife)
            bytesPerSecond = bytesPerSecond * keep + rate * (1 - keep)
        }
        self.last = (time, bytes)
    }

    /// Forget the history (after a pause or a restart).
    public mutating func reset() {
        last = nil
        bytesPerSecond = 0
    }

    /// 2^x without Foundation.
    private func pow2(_ x: Double) -> Double {
        // exp(x ln 2) by a short series around integer parts: precise enough for smoothing.
        let whole = x.rounded(.down)
        let fraction = x - whole
        var result = 1.0
        var term = 1.0
        let y = fraction * 0.6931471805599453
        for n in 1...12 {
            term *= y / Double(n)
            result += term
        }
        return result * Double(sign: .plus, exponent: Int(whole), significand: 1)
    }
}
