import HaulCore
import Testing

@Suite(.timeLimit(.minutes(1))) struct ByteRateTests {
    @Test(arguments: [
        ("500000", Int64(500_000)),
        ("1", 1),
        ("500K", 512_000),
        ("500k", 512_000),
        ("500KB", 512_000),
        ("500kib", 512_000),
        ("2M", 2_097_152),
        ("2mb", 2_097_152),
        ("1.5M", 1_572_864),
        ("0.5K", 512),
        ("1G", 1_073_741_824),
        ("1.25g", 1_342_177_280),
        ("100B", 100),
        ("007", 7),
        ("1.9", 1),
        ("0.1K", 102),
        // 2⁻³⁰ GiB is exactly one byte: the fraction is not cut short before rounding down.
        ("0.000000000931322574615478515625G", 1),
        ("8589934591.999999999G", 9_223_372_036_854_775_806),
        ("9223372036854775807", Int64.max),
    ])
    func parsesCurlAndWgetSpellings(text: String, bytesPerSecond: Int64) throws {
        #expect(try ByteRate(parsing: text) == ByteRate(bytesPerSecond: bytesPerSecond))
    }

    @Test(arguments: [
        ("", "rate limit '' is empty; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("abc", "invalid rate limit 'abc'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("2X", "invalid rate limit '2X'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("M", "invalid rate limit 'M'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        (" 2M", "invalid rate limit ' 2M'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("2 M", "invalid rate limit '2 M'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("2M/s", "invalid rate limit '2M/s'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("1.", "invalid rate limit '1.'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        (".5M", "invalid rate limit '.5M'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("1.2.3K", "invalid rate limit '1.2.3K'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("+5", "invalid rate limit '+5'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("-", "invalid rate limit '-'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("--5", "invalid rate limit '--5'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("5KK", "invalid rate limit '5KK'; use bytes per second such as 500000, 500K, 2M or 1.5M"),
        ("0", "rate limit '0' must be at least 1 byte per second (leave the option out for no limit)"),
        ("0K", "rate limit '0K' must be at least 1 byte per second (leave the option out for no limit)"),
        ("0.0001K", "rate limit '0.0001K' must be at least 1 byte per second (leave the option out for no limit)"),
        ("-5", "rate limit '-5' must be at least 1 byte per second (leave the option out for no limit)"),
        ("-2M", "rate limit '-2M' must be at least 1 byte per second (leave the option out for no limit)"),
        ("9223372036854775808", "rate limit '9223372036854775808' is too large"),
        ("8589934592G", "rate limit '8589934592G' is too large"),
        ("99999999999999999999999K", "rate limit '99999999999999999999999K' is too large"),
    ])
    func rejectsBadInputWithOneLineNamingIt(text: String, message: String) {
        #expect(throws: HaulError(.usage, message)) { try ByteRate(parsing: text) }
    }

    @Test func describesInBinaryUnits() {
        #expect(ByteRate(bytesPerSecond: 2 << 20).description == "2 MiB/s")
        #expect(ByteRate(bytesPerSecond: 1_572_864).description == "1.5 MiB/s")
        #expect(ByteRate(bytesPerSecond: 500_000).description == "488.28 KiB/s")
        #expect(ByteRate(bytesPerSecond: 512_000).description == "500 KiB/s")
        #expect(ByteRate(bytesPerSecond: 1024 + 51).description == "1.05 KiB/s")
        #expect(ByteRate(bytesPerSecond: 1024 + 10).description == "1.01 KiB/s")
        #expect(ByteRate(bytesPerSecond: 1024).description == "1 KiB/s")
        #expect(ByteRate(bytesPerSecond: 1023).description == "1023 B/s")
        #expect(ByteRate(bytesPerSecond: 1 << 30).description == "1 GiB/s")
        #expect(ByteRate(bytesPerSecond: (1 << 20) - 1).description == "1024 KiB/s", "rounded, not promoted")
    }
}

@Suite(.timeLimit(.minutes(1))) struct TokenBucketTests {
    @Test func defaultBurstIsATenthOfASecondButAtLeast16KiB() {
        #expect(TokenBucket(rate: 1000, now: 0).burst == 16_384)
        #expect(TokenBucket(rate: 1_000_000, now: 0).burst == 100_000)
        #expect(TokenBucket(rate: 1_000_000, burst: 5, now: 0).burst == 5)
    }

    @Test func startsFullThenWaitsForTheDebt() {
        var bucket = TokenBucket(rate: 1000, burst: 500, now: 10)
        #expect(bucket.tokens(now: 10) == 500)
        #expect(bucket.take(300, now: 10) == 0)
        #expect(bucket.take(200, now: 10) == 0)
        #expect(bucket.tokens(now: 10) == 0)
        #expect(bucket.take(250, now: 10) == 0.25)
        // Debt is allowed, and waits queue up behind it.
        #expect(bucket.take(500, now: 10) == 0.75)
        #expect(bucket.tokens(now: 10) == -750)
        #expect(bucket.delay(untilTaken: 750, now: 10) == 0.25)
        #expect(bucket.delay(untilTaken: 750, now: 10.25) == 0)
        #expect(bucket.take(0, now: 10.5) == 0.25, "taking nothing waits for the debt ahead")
        #expect(bucket.tokens(now: 11) == 250)
    }

    @Test func aChunkLargerThanTheBurstIsDelayedNotRefused() {
        var bucket = TokenBucket(rate: 1024, burst: 1024, now: 0)
        #expect(bucket.take(10 * 1024, now: 0) == 9)
        #expect(bucket.take(1, now: 9) == 1.0 / 1024)
    }

    @Test func refillsUpToTheBurstOnly() {
        var bucket = TokenBucket(rate: 100, burst: 50, now: 0)
        #expect(bucket.take(50, now: 0) == 0)
        #expect(bucket.tokens(now: 0.25) == 25)
        #expect(bucket.tokens(now: 100) == 50)
        #expect(bucket.take(50, now: 100) == 0)
        #expect(bucket.take(25, now: 100) == 0.25)
    }

    @Test func timeNeverRunsBackwards() {
        var bucket = TokenBucket(rate: 100, burst: 0, now: 5)
        #expect(bucket.take(100, now: 5) == 1)
        #expect(bucket.take(100, now: 3) == 2, "an earlier reading counts as no time passing")
        #expect(bucket.tokens(now: 0) == -200)
    }

    @Test func setRateKeepsTheDebtAndReschedulesIt() {
        var bucket = TokenBucket(rate: 100, burst: 0, now: 0)
        #expect(bucket.take(1000, now: 0) == 10)
        let position = bucket.taken
        // After 2 s at 100/s, 800 bytes are owed; at 400/s that is 2 s more.
        bucket.setRate(400, now: 2)
        #expect(bucket.rate == 400)
        #expect(bucket.tokens(now: 2) == -800)
        #expect(bucket.delay(untilTaken: position, now: 2) == 2)
        // A fraction of a token survives a change of rate.
        var fractional = TokenBucket(rate: 4, burst: 0, now: 0)
        #expect(fractional.take(3, now: 0) == 0.75)
        fractional.setRate(8, now: 0.125)
        #expect(fractional.tokens(now: 0.125) == -2.5)
        #expect(fractional.delay(untilTaken: 3, now: 0.125) == 0.3125)
    }

    @Test func setRateMovesADefaultBurstButNotAnExplicitOne() {
        var defaulted = TokenBucket(rate: 1_000_000, now: 0)
        defaulted.setRate(2_000_000, now: 0)
        #expect(defaulted.burst == 200_000)
        #expect(defaulted.tokens(now: 0) == 100_000, "a full bucket keeps its tokens")
        defaulted.setRate(1000, now: 0)
        #expect(defaulted.burst == 16_384)
        #expect(defaulted.tokens(now: 0) == 16_384, "capped at the smaller burst")
        var explicit = TokenBucket(rate: 1000, burst: 10, now: 0)
        explicit.setRate(1_000_000, now: 1)
        #expect(explicit.burst == 10)
    }

    @Test func refundBringsLaterReservationsForwardUpToTheBurst() {
        var bucket = TokenBucket(rate: 100, burst: 0, now: 0)
        #expect(bucket.take(100, now: 0) == 1)
        #expect(bucket.take(100, now: 0) == 2)
        #expect(bucket.take(100, now: 0) == 3)
        // The second reservation is cancelled at 0.5 s: the third comes due a second sooner.
        bucket.refund(100, now: 0.5)
        #expect(bucket.delay(untilTaken: bucket.taken, now: 0.5) == 1.5)
        #expect(bucket.tokens(now: 0.5) == -150)
        // Never beyond the burst.
        var capped = TokenBucket(rate: 100, burst: 10, now: 0)
        #expect(capped.take(110, now: 0) == 1)
        capped.refund(110, now: 0)
        #expect(capped.tokens(now: 0) == 10)
        #expect(capped.take(10, now: 0) == 0)
    }

    @Test func waitsQueueInTheOrderBytesWereTaken() {
        // Two connections taking 8 KiB in turn from a 16 KiB/s bucket get alternate slots.
        var bucket = TokenBucket(rate: 16_384, burst: 16_384, now: 0)
        let waits = (0..<6).map { _ in bucket.take(8192, now: 0) }
        #expect(waits == [0, 0, 0.5, 1, 1.5, 2])
    }

    @Test func longRunThroughputIsExactlyTheRate() {
        // A saturating consumer taking 1000 bytes at a time at 3000 B/s, each time at the moment
        // its previous chunk came due: a million 1/3-second steps, and the last chunk comes due at
        // exactly the time the bytes cost. Nothing is summed step by step, so nothing drifts.
        let rate: Int64 = 3000
        let chunk: Int64 = 1000
        var bucket = TokenBucket(rate: rate, burst: chunk, now: 0)
        var now = 0.0
        let takes: Int64 = 1_000_000
        for _ in 0..<takes {
            now += bucket.take(chunk, now: now)
        }
        let expected = Double(takes * chunk - chunk) / Double(rate)
        #expect(now == expected)
        #expect(expected == 333_333)
        #expect(bucket.tokens(now: expected) == 0, "every token that flowed in was used, none lost")
    }

    @Test func bytesUsableByAnyInstantAreExactlyBurstPlusRateTimesElapsed() {
        // A greedy consumer at every tenth of a second takes single bytes until one would have
        // to wait (and gives that one back).
        var bucket = TokenBucket(rate: 7, burst: 5, now: 0)
        var used: Int64 = 0
        for tenth in 0...100_000 {
            let now = Double(tenth) / 10
            while bucket.take(1, now: now) == 0 {
                used += 1
            }
            bucket.refund(1, now: now)
            if tenth % 10 == 0 {
                #expect(used == 5 + 7 * Int64(tenth / 10))
            } else if tenth % 10 == 5 {
                #expect(used == 5 + 7 * Int64(tenth) / 10)
            }
        }
        #expect(used == 5 + 7 * 10_000)
    }
}
