import Testing

@testable import HaulTesting

/// The test server's pace for a throttled body, on simulated time: whatever the ticks' lateness,
/// the bytes allowed by time t never exceed rate * (t + one tick), and a stalled reader gets at
/// most `maxCatchUp` seconds' worth at once.
@Suite(.timeLimit(.minutes(1))) struct ThrottleCreditTests {
    /// Writes everything allowed at each tick until `length` is out; returns (time, bytes
    /// written so far) after each tick.
    func send(_ length: Int64, rate: Int, ticks: [Double]) -> [(time: Double, sent: Int64)] {
        var credit = ThrottleCredit(rate: rate, tick: 0.01, maxCatchUp: 0.2)
        var sent: Int64 = 0
        var time = 0.0
        var log: [(time: Double, sent: Int64)] = []
        // The first tick's worth goes at once.
        sent += min(credit.available, length)
        credit.spend(min(credit.available, length))
        log.append((0, sent))
        var index = 0
        while sent < length {
            let elapsed = ticks[index % ticks.count]
            index += 1
            time += elapsed
            credit.earn(elapsed)
            let now = min(credit.available, length - sent)
            credit.spend(now)
            sent += now
            log.append((time, sent))
        }
        return log
    }

    @Test func aBodyTakesAtLeastItsLengthOverTheRateLessOneTick() {
        // 4,000 bytes at 10,000 B/s on punctual 10 ms ticks: the last byte goes at 0.29 s or later.
        let punctual = send(4_000, rate: 10_000, ticks: [0.01])
        #expect(punctual.last!.time >= 0.29 - 1e-9)
        for (time, sent) in punctual { #expect(Double(sent) <= 10_000 * (time + 0.01) + 1) }
    }

    @Test func lateTicksCatchUpButNeverExceedTheRate() {
        // 2 MiB at 8 MiB/s with ticks that fire late, irregularly: never ahead of the rate.
        let rate = 8 << 20
        let late = send(2 << 20, rate: rate, ticks: [0.01, 0.05, 0.013, 0.15, 0.011])
        for (time, sent) in late { #expect(Double(sent) <= Double(rate) * (time + 0.01) + 1) }
        #expect(late.last!.time >= Double(2 << 20) / Double(rate) - 0.01 - 1e-9)
    }

    @Test func aStalledReaderGetsAtMostTheCatchUpAtOnce() {
        var credit = ThrottleCredit(rate: 10_000, tick: 0.01, maxCatchUp: 0.2)
        credit.spend(credit.available)
        credit.earn(30)
        #expect(credit.available == 2_000)
    }
}
