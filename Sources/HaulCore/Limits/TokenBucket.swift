/// A token bucket as a pure value: `rate` tokens (bytes) per second flow in, up to `burst`;
/// taking bytes removes tokens and may leave the bucket in debt, so a chunk larger than the
/// burst is never refused, only delayed. Time is passed in, in seconds on a monotonic scale
/// (a reading earlier than one already seen counts as no time passing).
///
/// Every taken byte gets a place in one cumulative count (`taken`); the moment the bytes up to a
/// place may be used is computed afresh from a fixed anchor, `anchor + (place - base) / rate`,
/// never by adding up per-call refills, so at a steady rate the long-run throughput is exactly
/// `rate` with no rounding drift. Waits are served in the order the bytes were taken (FIFO),
/// which is what shares a limit fairly between connections that take in turn.
public struct TokenBucket: Sendable, Hashable {
    /// Bytes per second; always positive.
    public private(set) var rate: Int64
    /// The most tokens the bucket holds: how much may be used at once after being idle.
    public private(set) var burst: Int64
    /// All bytes ever taken (refunds do not lower it: they add tokens instead).
    public private(set) var taken: Int64 = 0
    /// `burst` was chosen by the caller, so it stays when the rate changes.
    private let burstIsExplicit: Bool
    /// The tokens at time `anchor` are `base - taken`, plus `rate` per second since.
    private var base: Int64
    private var anchor: Double
    /// The latest time seen, so that time never runs backwards.
    private var latest: Double

    /// The default burst for a rate: a tenth of a second's worth, but at least 16 KiB.
    public static func defaultBurst(forRate rate: Int64) -> Int64 {
        max(rate / 10, 16 * 1024)
    }

    /// A full bucket. `burst` defaults to ``defaultBurst(forRate:)``, following rate changes.
    public init(rate: Int64, burst: Int64? = nil, now: Double) {
        precondition(rate > 0, "a token bucket's rate must be positive")
        precondition((burst ?? 0) >= 0, "a token bucket's burst cannot be negative")
        self.rate = rate
        self.burst = burst ?? Self.defaultBurst(forRate: rate)
        self.burstIsExplicit = burst != nil
        self.base = self.burst
        self.anchor = now
        self.latest = now
    }

    /// The tokens in the bucket at `now`: at most `burst`, negative while in debt.
    public func tokens(now: Double) -> Double {
        min(Double(burst), unclampedTokens(now: max(now, latest)))
    }

    /// Takes `bytes` tokens and returns the seconds the caller must wait before using them: 0
    /// when the tokens were there; otherwise until the debt ahead of and including these bytes
    /// has been paid off.
    public mutating func take(_ bytes: Int64, now: Double) -> Double {
        precondition(bytes >= 0, "cannot take a negative number of bytes")
        advance(to: now)
        taken += bytes
        return delay(untilTaken: taken, now: now)
    }

    /// Seconds from `now` until the bytes up to cumulative place `position` (a value `taken` had
    /// right after a `take`) may be used; 0 if they may be already.
    public func delay(untilTaken position: Int64, now: Double) -> Double {
        guard position > base else { return 0 }
        let ready = anchor + Double(position - base) / Double(rate)
        return max(0, ready - max(now, latest))
    }

    /// Changes the rate from `now` on, keeping the tokens (or the debt) the bucket has at `now`;
    /// waits computed before no longer hold and must be asked for again with
    /// ``delay(untilTaken:now:)``.
    public mutating func setRate(_ rate: Int64, now: Double) {
        precondition(rate > 0, "a token bucket's rate must be positive")
        advance(to: now)
        guard rate != self.rate else { return }
        let tokens = unclampedTokens(now: latest)
        self.rate = rate
        if !burstIsExplicit {
            burst = Self.defaultBurst(forRate: rate)
        }
        if tokens >= Double(burst) {
            fill(at: latest)
        } else {
            // The whole tokens go into `base`; the fraction is kept by moving the anchor back.
            let whole = tokens.rounded(.down)
            base = taken + Int64(whole)
            anchor = latest - (tokens - whole) / Double(rate)
        }
    }

    /// Gives back `bytes` taken earlier that will not be used after all (their wait was
    /// cancelled): the reservations behind them come due sooner. The bucket still holds at
    /// most `burst`.
    public mutating func refund(_ bytes: Int64, now: Double) {
        precondition(bytes >= 0, "cannot refund a negative number of bytes")
        advance(to: now)
        base += bytes
        advance(to: latest)
    }

    // MARK: - Private

    private func unclampedTokens(now: Double) -> Double {
        Double(base - taken) + Double(rate) * max(0, now - anchor)
    }

    /// Moves time forward to `now`; a bucket that has filled up starts afresh from `now`, full
    /// (the tokens beyond `burst` are lost, which is what a cap means).
    private mutating func advance(to now: Double) {
        latest = max(latest, now)
        if unclampedTokens(now: latest) >= Double(burst) {
            fill(at: latest)
        }
    }

    private mutating func fill(at time: Double) {
        base = taken + burst
        anchor = time
    }
}
