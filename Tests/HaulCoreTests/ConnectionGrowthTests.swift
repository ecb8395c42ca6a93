import HaulCore
import Testing

/// `-x` not given: the count is found by trying, each step kept only if it paid.
@Suite(.timeLimit(.minutes(1))) struct ConnectionGrowthTests {
    typealias Growth = ConnectionGrowth

    /// Drives a growth against a link where `speed(count)` is what `count` receiving connections
    /// carry, every connection receiving as soon as it is asked for; returns each decision but
    /// `.wait`, and the count it ends at.
    func drive(start: Int, remaining: Int64 = 1 << 40, speed: (Int) -> Double) -> (
        decisions: [Growth.Decision], count: Int
    ) {
        var growth = Growth(start: start)
        var (count, now, completed) = (start, 0.0, Int64(0))
        var decisions: [Growth.Decision] = []
        while !growth.isDone, now < 60 {
            now += 0.25
            completed += Int64(speed(count) * 0.25)
            let decision = growth.tick(
                receiving: count, open: count, completed: completed, remaining: remaining - completed, now: now)
            switch decision {
            case .wait: continue
            case .grow(let to): count = to
            case .settle(let at): count = at
            }
            decisions.append(decision)
        }
        return (decisions, count)
    }

    /// A server that paces each connection: every step pays, up to the ceiling: one more
    /// connection first, then twice as many.
    @Test func aPerConnectionCapTakesItToTheCeiling() {
        let (decisions, count) = drive(start: 4) { Double($0) * 4_000_000 }
        #expect(decisions == [.grow(to: 5), .grow(to: 10), .grow(to: 16), .settle(at: 16)])
        #expect(count == 16)
    }

    /// A link that more connections do not speed up: the probe does not pay and is taken back,
    /// the only connection opened that did not raise the speed.
    @Test func anUncappedLinkKeepsTheStartAfterOneProbe() {
        let (decisions, count) = drive(start: 4) { _ in 100_000_000 }
        #expect(decisions == [.grow(to: 5), .settle(at: 4)])
        #expect(count == 4)
    }

    /// A shared cap reached at 10: the step to 16 gains nothing and goes back to 10.
    @Test func aSharedCapStopsAtTheLastStepThatPaid() {
        let (decisions, count) = drive(start: 4) { Double(min($0, 10)) * 1_000_000 }
        #expect(decisions == [.grow(to: 5), .grow(to: 10), .grow(to: 16), .settle(at: 10)])
        #expect(count == 10)
    }

    /// A step that brings less than 10 % is taken back. From 1 (the daemon's default): 2, 4,
    /// 8 pay; 16 brings 5 %.
    @Test func aGainUnderTenPercentIsTakenBack() {
        let (decisions, count) = drive(start: 1) { $0 >= 16 ? 8_400_000 : Double($0) * 1_000_000 }
        #expect(decisions == [.grow(to: 2), .grow(to: 4), .grow(to: 8), .grow(to: 16), .settle(at: 8)])
        #expect(count == 8)
    }

    /// Nothing is measured until every connection of a count receives.
    @Test func aCountIsMeasuredOnceAllItsConnectionsReceive() {
        var growth = Growth(start: 4)
        #expect(growth.tick(receiving: 3, open: 4, completed: 0, remaining: 1 << 30, now: 0) == .wait)
        #expect(growth.tick(receiving: 3, open: 4, completed: 1 << 20, remaining: 1 << 30, now: 5) == .wait)
        #expect(growth.tick(receiving: 4, open: 4, completed: 2 << 20, remaining: 1 << 30, now: 5.1) == .wait)
        #expect(growth.tick(receiving: 4, open: 4, completed: 3 << 20, remaining: 1 << 30, now: 5.3) == .wait)
        #expect(growth.tick(receiving: 4, open: 4, completed: 4 << 20, remaining: 1 << 30, now: 5.6) == .grow(to: 5))
    }

    /// Too little left to measure another step: the count stays.
    @Test func theEndOfTheFileEndsTheGrowth() {
        let (decisions, count) = drive(start: 4, remaining: 5_000_000) { Double($0) * 1_000_000 }
        #expect(decisions.last.map { if case .settle = $0 { true } else { false } } == true, "\(decisions)")
        #expect(count < 16)
    }

    /// The caller ends it (a refusal, the host's budget): no decision after.
    @Test func aStopIsFinal() {
        var growth = Growth(start: 4)
        growth.stop()
        #expect(growth.isDone)
        #expect(growth.tick(receiving: 4, open: 4, completed: 0, remaining: nil, now: 0) == .wait)
        #expect(growth.tick(receiving: 4, open: 4, completed: 1 << 30, remaining: nil, now: 10) == .wait)
    }

    /// A step that could open fewer connections than it asked for (too little left to split)
    /// is measured with those, and is the last.
    @Test func aShortStepIsMeasuredAndIsTheLast() {
        var growth = Growth(start: 4)
        _ = growth.tick(receiving: 4, open: 4, completed: 0, remaining: 1 << 30, now: 0)
        #expect(growth.tick(receiving: 4, open: 4, completed: 4 << 20, remaining: 1 << 30, now: 1) == .grow(to: 5))
        _ = growth.tick(receiving: 5, open: 5, completed: 4 << 20, remaining: 1 << 30, now: 1.5)
        #expect(growth.tick(receiving: 5, open: 5, completed: 9 << 20, remaining: 1 << 30, now: 2.5) == .grow(to: 10))
        // Only 7 could open: measured at 7 once all 7 receive.
        #expect(growth.tick(receiving: 6, open: 7, completed: 9 << 20, remaining: 1 << 30, now: 3) == .wait)
        #expect(growth.tick(receiving: 7, open: 7, completed: 10 << 20, remaining: 1 << 30, now: 3.5) == .wait)
        #expect(growth.tick(receiving: 7, open: 7, completed: 17 << 20, remaining: 1 << 30, now: 4.5) == .settle(at: 7))
        #expect(growth.isDone)
    }

    /// A step the host's budget has no room for waits, measured once taken; nothing is measured
    /// while it is held.
    @Test func aHeldStepIsTakenOnRelease() {
        var growth = Growth(start: 4)
        _ = growth.tick(receiving: 4, open: 4, completed: 0, remaining: 1 << 30, now: 0)
        #expect(growth.tick(receiving: 4, open: 4, completed: 4 << 20, remaining: 1 << 30, now: 1) == .grow(to: 5))
        growth.hold(5)
        #expect(growth.tick(receiving: 4, open: 4, completed: 8 << 20, remaining: 1 << 30, now: 2) == .wait)
        #expect(growth.tick(receiving: 4, open: 4, completed: 40 << 20, remaining: 1 << 30, now: 10) == .wait)
        #expect(!growth.isDone)
        #expect(growth.release() == 5)
        #expect(growth.release() == nil)
        _ = growth.tick(receiving: 5, open: 5, completed: 40 << 20, remaining: 1 << 30, now: 10.5)
        #expect(growth.tick(receiving: 5, open: 5, completed: 45 << 20, remaining: 1 << 30, now: 11.5) == .grow(to: 10))
    }
}
