/// How many connections a download runs over when the user named no count (`haul get` without
/// `-x`): found by trying, as a pure decision over measured speeds.
///
/// The download starts at its `connections` (4 for `haul get`). Once every one of them is
/// receiving, its speed is measured for `window` seconds; then it takes a step up: one more
/// connection first (a probe costs one connection where more do not help), then twice as many
/// each time, up to `ceiling`. A step is kept while it raised the download's speed by at least
/// `minimumGain` over the step before; the first step that did not is taken back (the count
/// falls to the last one that paid, its extra connections leaving at their piece ends) and the
/// growth ends. It also ends where the caller stops it, at a refusal or a 429/503 (the machine's
/// refusal rule then shrinks the count as for any download), and when what is left would be done
/// before another step could be measured. A step the host's budget
/// has no room for is held until it has (other downloads to the host ended).
///
/// A server that paces each connection (a CDN, a per-connection cap) makes every step pay, so
/// the count climbs to the ceiling in a few windows. On an uncapped link the probe shows no
/// gain and is the only connection opened that did not raise the speed. The measures assume
/// what the connections already carry is their steady speed: on a lossy link a new TCP
/// connection's slow start lowers a step's measure, so growth stops early rather than late.
public struct ConnectionGrowth: Hashable, Sendable {
    /// The most connections growth reaches (an explicit `-x` may ask for up to 64).
    public static let ceiling = 16
    /// A step must raise the speed by this fraction to be kept.
    public static let minimumGain = 0.10
    /// Seconds each count is measured over, from the moment all its connections receive.
    public static let window = 0.5

    /// What `tick` asks of the machine.
    public enum Decision: Hashable, Sendable {
        /// Nothing to do now: the count is waiting for its connections, being measured, held, or
        /// settled already.
        case wait
        /// Open connections up to this count.
        case grow(to: Int)
        /// The growth is over: keep this many connections (fewer than now when the last step
        /// did not pay).
        case settle(at: Int)
    }

    enum Phase: Hashable, Sendable {
        /// For all `count` connections to be receiving (or as many as there was work to open).
        case waiting(count: Int)
        /// `short`: fewer than asked for could open (too little left to split): no step after.
        case measuring(count: Int, since: Double, bytes: Int64, short: Bool)
        /// The host's budget has no room for the step to `count` now (`hold`); `release` takes it
        /// once there is.
        case held(count: Int)
        case done
    }

    /// The most connections this download grows to: `ConnectionGrowth.ceiling`, or its start when
    /// that is higher.
    public let ceiling: Int
    private(set) var phase: Phase
    struct Measure: Hashable, Sendable {
        var count: Int
        var speed: Double
    }

    /// The speed measured at the last count that paid, and that count.
    private(set) var best: Measure?
    /// Steps taken up (kept or taken back): the first is the probe of one more connection.
    private(set) var steps = 0

    /// `ceiling`: the class's, or `start` when that is above it (a daemon whose `-x` is 32).
    public init(start: Int) {
        ceiling = max(start, Self.ceiling)
        phase = .waiting(count: start)
    }

    /// Whether growth is over (settled, or stopped by the caller): it asks for no other count.
    public var isDone: Bool { phase == .done }

    /// Called at every tick: `receiving` is how many connections carry a body now, `open` how
    /// many the download has (fewer than a step asked for when there was not work enough to
    /// split), `completed` the download's bytes so far, `remaining` what is left (nil: unknown).
    public mutating func tick(receiving: Int, open: Int, completed: Int64, remaining: Int64?, now: Double) -> Decision {
        switch phase {
        case .done, .held:
            return .wait
        case .waiting(let target):
            let count = min(target, open)
            guard count > 0, receiving >= count else { return .wait }
            phase = .measuring(count: count, since: now, bytes: completed, short: count < target)
            return .wait
        case .measuring(let count, let since, let bytes, let short):
            let elapsed = now - since
            guard elapsed >= Self.window else { return .wait }
            let speed = Double(completed - bytes) / elapsed
            if let best, speed < best.speed * (1 + Self.minimumGain) {
                phase = .done
                return .settle(at: best.count)
            }
            best = Measure(count: count, speed: speed)
            let next = min(ceiling, steps == 0 ? count + 1 : count * 2)
            // No room for another step, or too little left to measure one.
            let secondsLeft = remaining.map { speed > 0 ? Double($0) / speed : .infinity } ?? .infinity
            guard !short, next > count, secondsLeft > 2 * Self.window else {
                phase = .done
                return .settle(at: count)
            }
            steps += 1
            phase = .waiting(count: next)
            return .grow(to: next)
        }
    }

    /// Growth ends where the caller says (a refusal).
    public mutating func stop() {
        phase = .done
    }

    /// The step to `count` that `tick` just asked for cannot be taken now (the host's budget is
    /// shared with other downloads): it waits for `release`.
    public mutating func hold(_ count: Int) {
        guard case .waiting = phase else { return }
        phase = .held(count: count)
    }

    /// The step held back, if any: the caller opens connections up to it now, and it is measured
    /// as any step.
    public mutating func release() -> Int? {
        guard case .held(let count) = phase else { return nil }
        phase = .waiting(count: count)
        return count
    }
}
