/// The URLs one download takes its bytes from, and what this run knows of each: whether its
/// bytes are proven to be the download's entity, set aside for a while, or dropped for good.
/// Pure rules, applied by the machine (`DownloadStateMachine+Sources`).
///
/// The rules:
/// - **One entity.** The first source to answer a download with no bytes yet is its reference.
///   Every other source must serve the same entity before it contributes a byte: the same
///   length, and the same bytes where it overlaps what is already written (a probe, compared
///   and not written: mirrors rarely share validators, so bytes are the proof). The first source
///   (`url`) is also proven by its validator on a resume (`If-Range`) or by the overlap a resume
///   without one re-reads, as a download with one URL always was.
/// - **A source that lies is dropped** (another length, other bytes, a 200 to a range when the
///   download needs ranges): it is never used again in this run, and the download finishes from
///   the others; with none left it fails. A file mixed from two entities is never written.
/// - **A dead source is dropped** (404, 410, 401, 403, or any failure another try will not
///   mend); a source that refuses connections, has no address, answers 429 or 503, or breaks a
///   connection is set aside until its backoff ends, and the others go on. Only when no other
///   source can be used does a failure count against the download's tries, as it does with one
///   URL.
/// - **Connections are spread** over the usable sources, fewest first; slow sources lose their
///   work to faster connections by stealing, as any slow connection does.
/// - **A much slower source is left.** Once one connection to a source brings less than a
///   `ratio`-th of what one brings from another source (`isSlow`), no new connection goes to it
///   while another can be used, and the machine moves the connections it has elsewhere. With
///   connections spread evenly, a mirror 20x slower held a third of them for the whole download.
///   A measure lasts `speedLifetime` without a new one: a source left as slow is tried again
///   then, so a wrong judgement (a starved client, a mirror that got faster) does not last.
public struct SourceSet: Hashable, Sendable {
    /// One URL of the download and what this run has learned of it.
    public struct Source: Hashable, Sendable {
        /// Whether a source may be used, and how far it is trusted.
        public enum Standing: Hashable, Sendable {
            /// Not heard from in this run (or heard only failures).
            case untried
            /// Serves the download's entity: its bytes may be written.
            case proven
            /// Not to be used before this time (seconds, the machine's clock).
            case setAside(until: Double)
            /// Never used again in this run.
            case dropped(reason: String)
        }

        /// The URL the source's requests go to.
        public let url: RemoteURL
        /// Whether it may be used now and whether its bytes may be written; `.untried` at first.
        public var standing: Standing = .untried
        /// What this source's responses said, for its own `If-Range` (mirrors rarely share
        /// validators, so one source's never goes to another).
        public var validator: EntityValidator?
        /// Failures in a row (for the length of its next wait).
        public var failures = 0
        /// Bytes per second one connection to this source brings: a moving average of the ticks
        /// that had a connection receiving from it (`noteSpeed`); nil until then.
        public var connectionSpeed: Double?
        /// Ticks that measured `connectionSpeed`.
        public var speedSamples = 0
        /// When `connectionSpeed` was last measured (the machine's clock).
        public var measuredAt: Double = 0

        /// A source not heard from yet: untried, with no validator, failure or speed.
        public init(url: RemoteURL) { self.url = url }

        /// Whether it was dropped for the rest of the run (`.dropped`), whatever the reason.
        public var isDropped: Bool {
            if case .dropped = standing { return true }
            return false
        }
    }

    /// Every source, in the order the URLs were given (a request's `url` first, then its
    /// mirrors). The other members name a source by its index here.
    public private(set) var sources: [Source]
    /// Seconds a source's measured speed counts without a new measure (see `noteSpeed`).
    public var speedLifetime: Double = 10

    /// The sources of `urls`, in that order, each untried.
    public init(_ urls: [RemoteURL]) {
        sources = urls.map(Source.init(url:))
    }

    /// Source `index`, read or replaced whole.
    public subscript(index: Int) -> Source {
        get { sources[index] }
        set { sources[index] = newValue }
    }

    /// How many sources the download has, dropped ones included.
    public var count: Int { sources.count }

    /// Whether source `index` may take a new connection at `now`.
    public func isUsable(_ index: Int, now: Double) -> Bool {
        switch sources[index].standing {
        case .untried, .proven: true
        case .setAside(let until): until <= now
        case .dropped: false
        }
    }

    /// Whether any source other than `index` may still be used, now or after its wait.
    public func othersRemain(besides index: Int) -> Bool {
        sources.indices.contains { $0 != index && !sources[$0].isDropped }
    }

    /// Whether any source has proven itself in this run.
    public var anyProven: Bool { sources.contains { $0.standing == .proven } }

    /// The source a new connection should use at `now`: a usable one with the fewest
    /// connections (`load`, by index), proven sources before untried ones at equal counts (an
    /// untried source costs a probe first), earlier ones before later ones. `canProbe`: whether an
    /// untried source may be tried now (there are bytes to compare it with, or nothing to compare
    /// against yet). With `slowRatio`, a source `isSlow` by it is picked only when no other can
    /// be. Nil when none can be used now.
    public func pick(now: Double, canProbe: Bool, load: [Int], slowRatio: Double? = nil) -> Int? {
        if let slowRatio,
            let fast = pick(
                now: now, canProbe: canProbe, load: load, skipping: { isSlow($0, ratio: slowRatio, now: now) })
        {
            return fast
        }
        return pick(now: now, canProbe: canProbe, load: load, skipping: { _ in false })
    }

    private func pick(now: Double, canProbe: Bool, load: [Int], skipping: (Int) -> Bool) -> Int? {
        var best: (index: Int, connections: Int, untried: Int)?
        for index in sources.indices where isUsable(index, now: now) && !skipping(index) {
            let proven = sources[index].standing == .proven
            if !proven, !canProbe { continue }
            let candidate = (index: index, connections: load[index], untried: proven ? 0 : 1)
            if let current = best, (current.connections, current.untried) <= (candidate.connections, candidate.untried)
            {
                continue
            }
            best = candidate
        }
        return best?.index
    }

    /// One tick's measure of source `index` at `now`: `perConnection` bytes per second on each of
    /// its receiving connections. A measure older than `speedLifetime` is forgotten first: the
    /// source is measured anew.
    public mutating func noteSpeed(_ index: Int, perConnection: Double, now: Double) {
        if now - sources[index].measuredAt > speedLifetime {
            sources[index].connectionSpeed = nil
            sources[index].speedSamples = 0
        }
        sources[index].connectionSpeed =
            sources[index].connectionSpeed.map { $0 * 0.5 + perConnection * 0.5 } ?? perConnection
        sources[index].speedSamples += 1
        sources[index].measuredAt = now
    }

    /// What one connection to source `index` brings: measured over two ticks at least, the
    /// last one no longer than `speedLifetime` ago.
    public func measuredSpeed(_ index: Int, now: Double) -> Double? {
        let source = sources[index]
        guard source.speedSamples >= 2, now - source.measuredAt <= speedLifetime else { return nil }
        return source.connectionSpeed
    }

    /// Whether one connection to source `index` brings less than a `ratio`-th of what one brings
    /// from the fastest other source that is not dropped. A source not measured (or not lately)
    /// is not slow, and neither is one with nothing measured to compare it with.
    public func isSlow(_ index: Int, ratio: Double, now: Double) -> Bool {
        guard let speed = measuredSpeed(index, now: now) else { return false }
        let others = sources.indices.filter { $0 != index && !sources[$0].isDropped }.compactMap {
            measuredSpeed($0, now: now)
        }
        guard let best = others.max() else { return false }
        return speed * ratio < best
    }

    /// When the first set-aside source may be used again, if every usable one is set aside.
    public func nextUsable(after now: Double) -> Double? {
        var earliest: Double?
        for source in sources {
            if case .setAside(let until) = source.standing, until > now { earliest = min(earliest ?? until, until) }
        }
        return earliest
    }

    /// Marks source `index` as serving the download's entity, so its bytes may be written, and
    /// clears its failures. A dropped source stays dropped.
    public mutating func prove(_ index: Int) {
        guard !sources[index].isDropped else { return }
        sources[index].standing = .proven
        sources[index].failures = 0
    }

    /// The entity changed (a start-over): no source is proven any more; dropped and set-aside
    /// ones stay as they are.
    public mutating func forgetProofs() {
        for index in sources.indices where sources[index].standing == .proven { sources[index].standing = .untried }
    }

    /// Drops source `index` for the rest of the run; `reason` is what `dropReasons` shows for it.
    /// Unlike `setAside` and `prove`, this applies to a source in any standing.
    public mutating func drop(_ index: Int, reason: String) {
        sources[index].standing = .dropped(reason: reason)
    }

    /// Sets `index` aside until `until`. It is probed again when its wait ends (one small
    /// request): what it serves may have changed meanwhile.
    public mutating func setAside(_ index: Int, until: Double) {
        guard !sources[index].isDropped else { return }
        sources[index].standing = .setAside(until: until)
        sources[index].failures += 1
    }

    /// Why every source was dropped, one line per source, for the download's error.
    public var dropReasons: String {
        sources.compactMap { source in
            if case .dropped(let reason) = source.standing { return "\(source.url.absoluteString): \(reason)" }
            return nil
        }.joined(separator: "; ")
    }
}

extension SourceSet {
    /// Whether an error on a source means it is gone for this run (dropped) rather than busy or
    /// flaky for a while (set aside).
    public static func isDead(_ error: HaulError) -> Bool {
        if let status = error.httpStatus, [401, 403, 404, 410, 451].contains(status) { return true }
        return !error.isTransient
    }
}
