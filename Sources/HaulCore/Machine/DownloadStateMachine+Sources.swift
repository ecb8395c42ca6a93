/// A download with several sources (mirrors): which source each connection asks, the probe
/// that proves a source serves the download's entity before it writes a byte, and what a
/// source's failure or lie means. The rules are `SourceSet`'s; with one source nothing here
/// changes what the machine does.
extension DownloadStateMachine {
    // MARK: Choosing

    /// Connections per source, by index.
    func sourceLoad() -> [Int] {
        var load = Array(repeating: 0, count: sources.count)
        for connection in connections.values { load[connection.source] += 1 }
        return load
    }

    /// The source a new connection asks: the least loaded usable one; while none can be used
    /// now, the first that is not dropped (its connection then waits out its backoff).
    func sourceForNewConnection() -> Int {
        guard sources.count > 1 else { return 0 }
        if let index = sources.pick(
            now: now, canProbe: canProbe, load: sourceLoad(), slowRatio: settings.slowSourceRatio)
        {
            return index
        }
        return sources.sources.indices.first { !sources[$0].isDropped } ?? 0
    }

    /// Whether an unproven source may be asked now: there are bytes to compare it with, or no
    /// source has answered yet and it may become the reference.
    var canProbe: Bool {
        probeRegion() != nil || (!sources.anyProven && completedLength == 0)
    }

    /// Whether source `index` must prove itself with a probe before its bytes are written: some
    /// other source is proven in this run, or (for a mirror) bytes are already on disk. The first
    /// source on a resume is checked as a download with one URL is, by `If-Range` or by the
    /// overlap a resume without a validator re-reads.
    func needsProbe(_ index: Int) -> Bool {
        guard sources.count > 1, sources[index].standing != .proven else { return false }
        return sources.anyProven || (index != 0 && completedLength > 0)
    }

    /// Bytes already accepted that a probe can be compared with: the last `overlap` bytes of the
    /// part with the most. Remote offsets.
    func probeRegion() -> ByteRange? {
        guard let index = parts.indices.max(by: { parts[$0].appended < parts[$1].appended }), parts[index].appended > 0
        else {
            return nil
        }
        let length = min(settings.overlap, parts[index].appended)
        return ByteRange(start: parts[index].next - length, end: parts[index].next - 1)
    }

    /// What a request to source `index` carries: its URL, and credentials only where they
    /// belong (the download's to its own origin, a mirror's from its own URL).
    func sourceRequest(_ index: Int) -> (url: RemoteURL, credentials: Credentials?, validator: EntityValidator?) {
        guard index != 0 else { return (record.request.url, record.request.credentials, record.validator) }
        let url = sources[index].url
        let credentials =
            url.credentials ?? (url.hasSameOrigin(as: record.request.url) ? record.request.credentials : nil)
        return (url, credentials, sources[index].validator)
    }

    /// Before a connection's next request: it moves to a source with fewer connections when
    /// the spread is uneven by two or more (a source that came back, an untried mirror), so the
    /// load evens out at piece ends without cutting any request; and off a source that is much
    /// slower than another (`SourceSet.isSlow`) whatever the counts.
    mutating func rebalance(_ id: ConnectionID) {
        guard sources.count > 1, let connection = connections[id] else { return }
        let load = sourceLoad()
        guard let target = sources.pick(now: now, canProbe: canProbe, load: load, slowRatio: settings.slowSourceRatio),
            target != connection.source
        else { return }
        let ratio = settings.slowSourceRatio
        let faster =
            sources.isSlow(connection.source, ratio: ratio, now: now) && !sources.isSlow(target, ratio: ratio, now: now)
        guard faster || load[target] + 1 < load[connection.source] else { return }
        connections[id]?.source = target
    }

    // MARK: Speeds

    /// At a tick: what one connection brought from each source since the last tick (`bytes`: by
    /// connection, the bytes it received since the last tick). Only connections whose body was
    /// already flowing at the last tick count: the wait for a first byte is latency, not speed,
    /// and a client starved of CPU (a loaded test run) once measured a fast mirror's new
    /// connection at nearly nothing there and left it. Probes are left out too.
    mutating func measureSources(_ bytes: [(source: Int, count: Int64)], elapsed: Double) {
        guard sources.count > 1, elapsed > 0 else { return }
        var sum = Array(repeating: Int64(0), count: sources.count)
        var connections = Array(repeating: 0, count: sources.count)
        for (source, count) in bytes {
            sum[source] += count
            connections[source] += 1
        }
        for index in sources.sources.indices where connections[index] > 0 {
            sources.noteSpeed(index, perConnection: Double(sum[index]) / Double(connections[index]) / elapsed, now: now)
        }
    }

    /// At a tick: a connection on a source that is much slower than another usable one
    /// (`SourceSet.isSlow`) is closed and its part goes to a new connection on a faster source,
    /// unless the rest of its request would come within `minimumStealSeconds` anyway. Without
    /// this, a connection on a mirror 20x slower kept its piece (a quarter of its share of the
    /// file) until faster connections ran out of other work and stole it.
    mutating func leaveSlowSources() -> [Action] {
        guard sources.count > 1, isFetching else { return [] }
        let ratio = settings.slowSourceRatio
        var actions: [Action] = []
        for id in connections.keys.sorted() {
            guard let connection = connections[id], connection.phase == .receiving, !connection.probing,
                sources.isSlow(connection.source, ratio: ratio, now: now), let index = partIndex(connection.part),
                let speed = sources.measuredSpeed(connection.source, now: now),
                let target = sources.pick(now: now, canProbe: canProbe, load: sourceLoad(), slowRatio: ratio),
                !sources.isSlow(target, ratio: ratio, now: now)
            else { continue }
            let last = min(connection.requestedEnd ?? Int64.max, parts[index].end ?? Int64.max)
            guard last != Int64.max, Double(last - parts[index].next + 1) / max(speed, 1) > settings.minimumStealSeconds
            else { continue }
            actions += dropConnection(id)
            if connections.count < limit, let free = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
                actions += request(newConnection(part: free, isExtra: true))
            }
        }
        return actions
    }

    // MARK: The probe

    /// The request that proves source `connection.source`: the bytes of `probeRegion`, compared
    /// with the disk and not written.
    mutating func probeRequest(_ id: ConnectionID, region: ByteRange) -> [Action] {
        guard let connection = connections[id] else { return [] }
        // A probe holds no part: its part would look unrequested and be stolen away piece by
        // piece while it waits. Once proven, the connection takes work as a free one does.
        if let index = partIndex(connection.part), parts[index].owner == id { parts[index].owner = nil }
        let source = sourceRequest(connection.source)
        var plan = RequestPlan(
            url: source.url, range: region, ifRange: nil, headers: record.request.headers(for: source.url),
            credentials: source.credentials,
            allowsHTTP2: allowsHTTP2, signing: record.request.signing)
        plan.authorization = authorization(for: source.url)
        connections[id]?.phase = .requesting(plan)
        connections[id]?.probing = true
        connections[id]?.requestedEnd = region.end
        connections[id]?.received = 0
        connections[id]?.bytesAtLastTick = 0
        connections[id]?.pace = Pace()
        return [.request(id, plan)]
    }

    /// A probe's response: the bytes it brings are compared, none written.
    mutating func probeAnswered(_ id: ConnectionID, _ verdict: ResponseCheck.Verdict, plan: RequestPlan, jitter: Double)
        -> [Action]
    {
        guard let source = connections[id]?.source else { return [] }
        switch verdict {
        case .partial(let start, let end, _, let validator):
            guard let asked = plan.range, start == asked.start, end == asked.end else {
                return sourceLied(id, reason: "answered the probe with other bytes than asked")
            }
            sources[source].validator = validator
            // A 206 from any source proves ranges: more connections may open.
            rangesProven = true
            connections[id]?.phase = .receiving
            connections[id]?.requestedEnd = end
            connections[id]?.compare = end - start + 1
            connections[id]?.compareOffset = start
            connections[id]?.skip = 0
            return [.receive(id)]
        case .whole:
            return sourceLied(id, reason: "ignores ranges (answered 200 to a range request)")
        case .alreadyComplete, .entityChanged:
            return sourceLied(id, reason: "serves a file of another length")
        case .notModified:
            // A probe never asks "modified since?".
            return sourceLied(id, reason: "answered a probe with 304")
        case .retry(let error, let retryAfter):
            return sourceFailed(id, error, retryAfter: retryAfter, jitter: jitter)
                ?? connectionFailed(id, error, retryAfter: retryAfter, jitter: jitter)
        case .fail(let error):
            return sourceFailed(id, error, retryAfter: nil, jitter: jitter) ?? fail(error)
        }
    }

    /// The chunk of a probe: compared, nothing kept.
    mutating func probeReceived(_ id: ConnectionID, count: Int) -> Accepted {
        guard var connection = connections[id] else { return .nothing }
        let compare = min(connection.compare, Int64(count))
        let offset = connection.compareOffset
        connection.compare -= compare
        connection.compareOffset += compare
        connections[id] = connection
        return Accepted(
            skip: 0, compare: Int(compare), compareOffset: offset - fileBase, keep: 0, writeOffset: 0,
            part: connection.part, partComplete: connection.compare == 0 && Int64(count) > compare)
    }

    /// A probe's body ended: every byte matched (a mismatch is reported as `overlapMismatch`), so
    /// the source is proven and the connection goes to work on it.
    mutating func probeEnded(_ id: ConnectionID, jitter: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        guard connection.compare == 0 else {
            return sourceFailed(
                id, HaulError(.lengthMismatch, "\(sources[connection.source].url): the probe's body ended early"),
                retryAfter: nil, jitter: jitter) ?? dropConnection(id)
        }
        sources.prove(connection.source)
        connections[id]?.probing = false
        connections[id]?.failures = 0
        if let index = partIndex(connection.part), parts[index].owner == id, !parts[index].isComplete {
            return request(id)
        }
        return partDone(id)
    }

    // MARK: Failures

    /// Source `connection.source` served something else than the download's entity: it is
    /// dropped (never asked again in this run) and the connection goes to another source, or the
    /// download fails when none is left. This report was the connection's last.
    mutating func sourceLied(_ id: ConnectionID, reason: String) -> [Action] {
        guard let connection = connections[id] else { return [] }
        sources.drop(connection.source, reason: reason)
        var actions: [Action] = [
            .notify(.sourceDropped(url: sources[connection.source].url.absoluteString, reason: reason))
        ]
        guard sources.sources.contains(where: { !$0.isDropped }) else {
            return actions
                + fail(HaulError(.badResponse, "no source serves one consistent file: \(sources.dropReasons)"))
        }
        connections[id]?.probing = false
        connections[id]?.compare = 0
        let next = sourceForNewConnection()
        connections[id]?.source = next
        connections[id]?.phase = .waiting
        actions += request(id)
        return actions
    }

    /// A failure on a source while other sources remain: a dead source is dropped, a busy or
    /// flaky one set aside for its backoff, and the connection asks another source at once,
    /// counting nothing against the download's tries. Nil when no other source can take the
    /// connection now: the failure then counts as it does with one URL.
    mutating func sourceFailed(_ id: ConnectionID, _ error: HaulError, retryAfter: Duration?, jitter: Double)
        -> [Action]?
    {
        guard sources.count > 1, let connection = connections[id], sources.othersRemain(besides: connection.source)
        else { return nil }
        let source = connection.source
        let dead = SourceSet.isDead(error)
        let delay = settings.retry.delay(
            afterFailures: sources[source].failures + 1, retryAfter: retryAfter, jitter: jitter)
        var load = sourceLoad()
        load[source] = Int.max
        var others = sources
        others.drop(source, reason: "")
        guard let target = others.pick(now: now, canProbe: canProbe, load: load, slowRatio: settings.slowSourceRatio)
        else {
            // The others wait out their backoffs: this connection waits with them, on the next
            // source that is not dropped, counting this failure.
            guard dead, let next = others.sources.indices.first(where: { !others[$0].isDropped }) else { return nil }
            sources.drop(source, reason: error.message)
            connections[id]?.source = next
            return [.notify(.sourceDropped(url: sources[source].url.absoluteString, reason: error.message))]
                + connectionFailed(id, error, retryAfter: retryAfter, jitter: jitter)
        }
        var actions: [Action]
        if dead {
            sources.drop(source, reason: error.message)
            actions = [.notify(.sourceDropped(url: sources[source].url.absoluteString, reason: error.message))]
        } else {
            sources.setAside(source, until: now + delay.seconds)
            actions = [.notify(.sourceSetAside(url: sources[source].url.absoluteString, error: error, retryIn: delay))]
        }
        connections[id]?.probing = false
        connections[id]?.compare = 0
        connections[id]?.source = target
        connections[id]?.phase = .waiting
        connections[id]?.pace = Pace()
        connections[id]?.received = 0
        return actions + request(id)
    }

    /// The download's `Authorization` for a request to `url`: only to the origin of the
    /// download's own URL, never to a mirror's.
    func authorization(for url: RemoteURL) -> String? {
        guard let value = record.request.authorization, url.hasSameOrigin(as: record.request.url) else { return nil }
        return value
    }
}
