/// Which bytes each connection of a download asks for: the first connection, the split once the
/// server has proven ranges, the pieces a connection asks for in turn on the connection it has,
/// work stealing, and the allowance from the host's connection budget. The arithmetic is
/// `SegmentPlanner`'s; this applies it to the parts and connections.
extension DownloadStateMachine {
    /// The host's connection budget (`ConnectionBudget`) now lets this download have `allowance`
    /// connections at once. More opens connections where there is work; less lets connections
    /// go where their pieces end (`pieceDone`), never cutting a running request.
    public mutating func setAllowance(_ allowance: Int) -> [Action] {
        let grew = allowance > self.allowance
        self.allowance = max(0, allowance)
        guard grew, isFetching else { return [] }
        // Started with none to spare: the first connection opens now.
        if connections.isEmpty { return openFirstConnection() }
        return releaseGrowth() + openMoreConnections()
    }

    // MARK: Planning

    mutating func openFirstConnection() -> [Action] {
        guard let index = parts.firstIndex(where: { !$0.isComplete }) else { return beginVerify() }
        // The host's budget has no connection for this download yet: `setAllowance` opens it.
        guard limit > 0 else { return [] }
        let id = newConnection(part: index, isExtra: false)
        return request(id)
    }

    /// Opens connections up to the limit while there is work for them: parts nobody works on
    /// first, then even splits of the largest remaining part, the next largest, and so on.
    mutating func openMoreConnections() -> [Action] {
        guard rangesProven, isFetching, record.totalLength != nil else { return [] }
        if readsInOrder { return openConnectionsInOrder() }
        var actions: [Action] = []
        while connections.count < limit, let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
            actions += request(newConnection(part: index, isExtra: true))
        }
        while connections.count < limit, let opened = splitLargestPart(into: limit - connections.count + 1) {
            actions += opened
        }
        // The new parts reach the store with the next checkpoint, in the same write as the
        // shortened part (DESIGN rule 2). Until then the stored layout is the old one, which
        // claims only durable bytes: a crash re-fetches the new parts' bytes, nothing worse.
        // Not storing here keeps an fsync of the store off the path of every new request.
        return actions
    }

    /// Splits the largest running part into at most `pieces` (the owner keeps the first) and
    /// opens a connection on each new one; nil when it cannot be split.
    mutating func splitLargestPart(into pieces: Int) -> [Action]? {
        guard let largest = largestRunningPart(), let end = parts[largest].end else { return nil }
        var points = SegmentPlanner.splitPoints(
            next: parts[largest].next, end: end, pieces: pieces, minimum: settings.minimumSegment)
        // The owner keeps the piece it asked for: if an even split would cut it, what is still
        // to be asked for is split instead. (A request for a whole part is cut where the split
        // says; so is one whose unasked rest is too small to split while the whole could be.)
        let unrequested = unrequestedStart(largest)
        if settings.piecesPerConnection > 0, let first = points.first, first < unrequested {
            let rest = SegmentPlanner.splitPoints(
                next: unrequested, end: end, pieces: pieces, minimum: settings.minimumSegment)
            if !rest.isEmpty { points = rest }
        }
        guard !points.isEmpty else { return nil }
        let bounds = points + [end + 1]
        parts[largest].end = points[0] - 1
        for (start, next) in zip(bounds, bounds.dropFirst()) {
            parts.append(Part(start: start, end: next - 1, appended: 0, durable: 0, owner: nil))
        }
        parts.sort { $0.start < $1.start }
        var actions: [Action] = []
        for start in points {
            actions += request(newConnection(part: partIndex(start)!, isExtra: true))
        }
        return actions
    }

    /// `connection` finished its part: find it more work, or let it go.
    mutating func partDone(_ id: ConnectionID) -> [Action] {
        guard var connection = connections[id] else { return [] }
        if let index = partIndex(connection.part), parts[index].owner == id { parts[index].owner = nil }
        connection.failures = 0
        connections[id] = connection
        if parts.allSatisfy(\.isComplete) {
            connections[id] = nil
            return closeEverything() + beginVerifyWhenClosed()
        }
        if stopRequest == nil, rangesProven, connections.count <= limit {
            rebalance(id)
            if readsInOrder {
                if let actions = nextWorkInOrder(for: id) { return actions }
            } else {
                if let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
                    assign(id, to: index)
                    return request(id)
                }
                if let stolen = steal(for: id) {
                    return request(stolen) // stored with the next checkpoint, as a split
                }
            }
        }
        if stopRequest == nil, limit > 0, connections.count == 1,
            let index = readsInOrder
                ? cutNextWindow(boundless: true) : parts.firstIndex(where: { $0.owner == nil && !$0.isComplete })
        {
            // The last connection never leaves work undone: the download would wait forever.
            assign(id, to: index)
            return request(id)
        }
        connections[id] = nil
        return finishStopIfClosed()
    }

    /// `connection` has every byte of its piece, and its part has more: it asks for the next
    /// piece on the connection it has. If the download now has more connections than its
    /// limit (a refusal, a smaller share of the host's budget), this one lets its part go to
    /// whichever connection finishes first: no running request is ever cut for a limit.
    mutating func pieceDone(_ id: ConnectionID) -> [Action] {
        guard let connection = connections[id] else { return [] }
        guard connections.count > limit else {
            rebalance(id)
            return request(id)
        }
        if let index = partIndex(connection.part), parts[index].owner == id { parts[index].owner = nil }
        connections[id] = nil
        return finishStopIfClosed()
    }

    /// Takes the tail of the part that would finish last, cut so that both finish together:
    /// from the bytes its owner has not asked for yet when they are enough, and only otherwise
    /// by cutting the owner's running request. Returns the connection, now assigned to the new
    /// part.
    mutating func steal(for id: ConnectionID) -> ConnectionID? {
        let mySpeed = connections[id]?.speed ?? medianSpeed()
        var best: (index: Int, finish: Double)?
        for (index, part) in parts.enumerated() where !part.isComplete {
            guard let owner = part.owner, let remaining = part.remaining, let ownerConnection = connections[owner],
                ownerConnection.isWorking
            else { continue }
            let finish = Double(remaining) / max(ownerConnection.speed ?? mySpeed ?? 1, 1)
            if best == nil || finish > best!.finish { best = (index, finish) }
        }
        guard let best, let end = parts[best.index].end, let owner = parts[best.index].owner else { return nil }
        let ownerSpeed = connections[owner]?.speed
        // An owner that finishes soon keeps its part: at its measured speed, or (just assigned,
        // not measured yet) at the thief's. Without that estimate, steals of steals halved the
        // last parts down to `minimumSteal`, a new request each (seen in nginx's log at -x 8).
        if best.finish < settings.minimumStealSeconds { return nil }
        // A connection that has not shown its speed yet keeps half.
        let speedsKnown = ownerSpeed != nil && mySpeed != nil
        guard
            var cut = SegmentPlanner.stealPoint(
                next: parts[best.index].next, end: end,
                ownerSpeed: speedsKnown ? ownerSpeed : nil,
                thiefSpeed: speedsKnown ? mySpeed : nil,
                minimum: settings.minimumSteal)
        else { return nil }
        // Bytes past the owner's running request are taken before that request is cut.
        if let requested = connections[owner]?.requestedEnd, requested < end, cut <= requested,
            end - requested >= settings.minimumSteal
        {
            cut = requested + 1
        }
        // A part keeps at least its first byte: two parts never share a start.
        guard cut > parts[best.index].start else { return nil }
        parts[best.index].end = cut - 1
        parts.insert(Part(start: cut, end: end, appended: 0, durable: 0, owner: nil), at: best.index + 1)
        assign(id, to: best.index + 1)
        return id
    }

    // MARK: Requests

    mutating func newConnection(part index: Int, isExtra: Bool) -> ConnectionID {
        let id = nextConnectionID
        nextConnectionID += 1
        connections[id] = Connection(
            phase: .waiting, part: parts[index].start, isExtra: isExtra, source: sourceForNewConnection(),
            progressAtFailure: progressInRun)
        parts[index].owner = id
        return id
    }

    /// A connection takes another part; its measured speed is the connection's and goes with it.
    mutating func assign(_ id: ConnectionID, to index: Int) {
        connections[id]?.part = parts[index].start
        parts[index].owner = id
    }

    /// The request for the rest of `connection`'s part.
    mutating func request(_ id: ConnectionID) -> [Action] {
        guard isDownloading, stopRequest == nil, let connection = connections[id],
            let index = partIndex(connection.part)
        else { return [] }
        let part = parts[index]
        if part.isComplete { return partDone(id) }
        if needsProbe(connection.source) {
            if let region = probeRegion() { return probeRequest(id, region: region) }
            // Nothing to compare with yet: a proven source takes this request.
            if let proven = sources.pick(
                now: now, canProbe: false, load: sourceLoad(), slowRatio: settings.slowSourceRatio)
            {
                connections[id]?.source = proven
            }
        }
        // A connection asks only for a part it owns: one whose part went to another connection
        // meanwhile (a probe holds none) finds other work, as a free connection does. Two
        // connections writing one part would interleave their bytes.
        if let owner = part.owner, owner != id { return partDone(id) }
        parts[index].owner = id
        let source = sourceRequest(connections[id]?.source ?? 0)
        var start = part.next
        // No validator to send in If-Range: re-read some bytes before the resume point instead.
        if part.appended > 0, rereadsOverlap(source.validator) {
            start -= min(settings.overlap, part.appended)
        }
        let range: ByteRange?
        // A download that may grow asks in pieces from its first connection on, as one over
        // several does: the first 206 proves ranges, and later connections take what is unasked.
        if record.request.connections > 1 || record.request.growsConnections,
            var size = SegmentPlanner.pieceSize(
                total: record.totalLength, connections: max(record.request.connections, limit),
                perConnection: settings.piecesPerConnection,
                minimum: settings.minimumSegment, maximum: settings.maximumPiece)
        {
            // Read in order: pieces of `-k`, whatever the file's size (`SequentialPlanner`).
            if readsInOrder { size = sequentialPiece }
            // A piece of the part (the first one proves, with a 206, that the server serves
            // ranges), so the request ends by itself and the connection carries the next one.
            if record.totalLength == nil, sources.count > 1 {
                // With mirrors every connection starts on the first URL (the others cannot be
                // probed before bytes are written): a short first piece brings the first one to
                // a piece end, where it moves to another mirror, however slow the first URL is.
                size = min(size, settings.firstPieceWithMirrors)
            }
            range = ByteRange(
                start: start, end: SegmentPlanner.pieceEnd(next: part.next, partEnd: part.end, size: size))
        } else if start == 0, part.end == nil, record.request.connections == 1, !record.request.growsConnections {
            // The whole file in one request, over one connection for the whole download.
            range = nil
        } else {
            // One request for the rest of the part; with several connections the first one asks
            // for `bytes=0-`: a 206 proves ranges.
            range = ByteRange(start: start, end: part.end)
        }
        var plan = RequestPlan(
            url: source.url,
            range: range,
            ifRange: range == nil ? nil : ifRangeValue(source.validator),
            headers: record.request.headers(for: source.url),
            credentials: source.credentials,
            allowsHTTP2: allowsHTTP2,
            ifModifiedSince: modifiedSince.map(HTTPDate.format), signing: record.request.signing)
        plan.authorization = authorization(for: source.url)
        connections[id]?.phase = .requesting(plan)
        connections[id]?.requestedEnd = range?.end
        connections[id]?.received = 0
        connections[id]?.bytesAtLastTick = 0
        connections[id]?.pace = Pace()
        return [.request(id, plan)]
    }

    // MARK: Queries

    /// The first byte of part `index` that no running request has asked for.
    func unrequestedStart(_ index: Int) -> Int64 {
        let part = parts[index]
        guard let owner = part.owner, let connection = connections[owner], connection.isWorking else {
            return part.next
        }
        guard let requested = connection.requestedEnd else { return (part.end ?? part.next) + 1 }
        return max(part.next, requested + 1)
    }

    func largestRunningPart() -> Int? {
        var best: (index: Int, remaining: Int64)?
        for (index, part) in parts.enumerated() where !part.isComplete {
            guard let remaining = part.remaining else { continue }
            if best == nil || remaining > best!.remaining { best = (index, remaining) }
        }
        return best?.index
    }
}
