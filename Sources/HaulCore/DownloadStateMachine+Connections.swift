/// The connections of one download: what each asks for, what its answer means, how the parts
/// are shared out (the first split, work stealing), retries, refusals, and stopping.
extension DownloadStateMachine {
    // MARK: Connection events

    /// A response head arrived for `connection`'s last `.request`.
    public mutating func responseReceived(_ id: ConnectionID, _ head: ResponseHead, nowSecondsSince1970: Int64,
                                          jitter: Double) -> [Action] {
        guard var connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        guard case .requesting(let plan) = connection.phase, let index = partIndex(connection.part) else {
            return unexpected("response")
        }
        record.finalURL = head.url
        lastNowSince1970 = nowSecondsSince1970
        let part = parts[index]
        let verdict = ResponseCheck.evaluate(head, asked: plan, next: part.next, partEnd: part.end, resuming: part.appended > 0,
                                             requested: record.request.range, validator: record.validator,
                                             total: record.totalLength, nowSecondsSince1970: nowSecondsSince1970)
        switch verdict {
        case .partial(let start, _, let total, let validator):
            record.validator = validator
            if let total, record.totalLength == nil { learnTotal(total) }
            connection.phase = .receiving
            connection.received = 0
            connection.bytesAtLastTick = 0
            // An overlap request starts before the part's next byte: those bytes are compared.
            connection.compare = part.next - start
            connection.compareOffset = start
            connection.skip = 0
            connections[id] = connection
            let firstProof = !rangesProven
            rangesProven = true
            var actions = prepareBody(head: head) + [.receive(id)]
            if firstProof {
                actions += openMoreConnections()
            } else if connection.isExtra, connectionLimit < record.request.connections, !moreConnectionsScheduled {
                // An extra connection worked after a refusal: try one more, as patiently.
                moreConnectionsScheduled = true
                actions.append(.schedule(.moreConnections, after: connectionBackoff(retryAfter: nil)))
            }
            return actions

        case .whole(let length, let validator):
            if connections.count > 1 || connection.isExtra {
                // A 200 to one of several range requests: the server ignores ranges after all,
                // or the entity changed between connections. Nothing from it is written.
                if let validator, let known = record.validator, known.conflicts(with: validator) {
                    return startOver(reason: "the file changed on the server between connections", cause: .changedBetweenConnections, answered: id)
                }
                if let length, let total = record.totalLength, length != total {
                    return startOver(reason: "the file changed length on the server between connections", cause: .changedBetweenConnections, answered: id)
                }
                return connectionFailed(id, HaulError(.badResponse, "\(plan.url): the server ignored a range request"),
                                        retryAfter: nil, jitter: jitter)
            }
            let hadBytes = completedLength > 0
            // The whole entity from byte 0: nothing remembered about an earlier one survives,
            // least of all its length.
            resetEntity()
            record.validator = validator
            if let length { learnTotal(length) }
            connection.phase = .receiving
            connection.received = 0
            connection.bytesAtLastTick = 0
            connection.part = parts[0].start
            connection.skip = record.request.range?.start ?? 0
            connection.compare = 0
            connections[id] = connection
            parts[0].owner = id
            var actions: [Action] = []
            if hadBytes {
                actions.append(.notify(.restarted(reason: "the server sent the whole file; starting over", cause: .rangesIgnored)))
            }
            actions += prepareBody(head: head) + [.truncate(to: 0), .receive(id)]
            // A resume refused by If-Range from a server that announces ranges: the new entity
            // can still be split.
            if plan.ifRange != nil, head.headers["Accept-Ranges"]?.lowercased() == "bytes", length != nil,
               validator?.ifRangeValue != nil {
                rangesProven = true
                actions += openMoreConnections()
            }
            return actions

        case .alreadyComplete(let total):
            if record.totalLength == nil { learnTotal(total) }
            parts[index].appended = max(parts[index].appended, (parts[index].end ?? (total - 1)) - parts[index].start + 1)
            return partDone(id)

        case .entityChanged:
            return startOver(reason: "\(plan.url) changed on the server; starting over", cause: .changedOnServer, answered: id)

        case .retry(let error, let retryAfter):
            if connection.isExtra, error.httpStatus == 503 || error.httpStatus == 429, othersReceiving(besides: id) {
                return refused(id, error, retryAfter: retryAfter)
            }
            return connectionFailed(id, error, retryAfter: retryAfter, jitter: jitter)

        case .fail(let error):
            if connection.isExtra, othersReceiving(besides: id) {
                // Some servers answer 403 past their connection limit: keep the ones that work.
                return refused(id, error, retryAfter: nil)
            }
            return fail(error)
        }
    }

    /// A chunk of `count` bytes arrived on `connection`: where its bytes go. The hot path: no
    /// allocation, one dictionary lookup.
    public mutating func received(_ id: ConnectionID, count: Int) -> Accepted {
        guard var connection = connections[id], connection.phase == .receiving, let index = partIndex(connection.part) else {
            return .nothing
        }
        var left = Int64(count)
        let skip = min(connection.skip, left)
        connection.skip -= skip
        left -= skip
        let compare = min(connection.compare, left)
        let compareOffset = connection.compareOffset
        connection.compare -= compare
        connection.compareOffset += compare
        left -= compare
        var part = parts[index]
        let keep = min(left, part.remaining ?? Int64.max)
        let writeOffset = part.next - fileBase
        part.appended += keep
        connection.received += keep
        connection.pace.progress += progress(kept: keep)
        parts[index] = part
        connections[id] = connection
        var accepted = Accepted(skip: Int(skip), compare: Int(compare), compareOffset: compareOffset - fileBase, keep: Int(keep),
                                writeOffset: writeOffset, part: part.start, partComplete: part.isComplete)
        accepted.noteDue = noteDue(after: keep)
        return accepted
    }

    /// The overlap compared after a resume without a validator did not match the disk. The
    /// connection has stopped: this is its last report.
    public mutating func overlapMismatch(_ id: ConnectionID) -> [Action] {
        guard connections.removeValue(forKey: id) != nil else { return [] }
        if let index = parts.firstIndex(where: { $0.owner == id }) { parts[index].owner = nil }
        return startOver(reason: "the file on the server is not the one the .part came from; starting over", cause: .overlapMismatch)
    }

    /// The body ended (cleanly, or because `received` said the part was complete).
    public mutating func bodyEnded(_ id: ConnectionID, jitter: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        guard connection.phase == .receiving, let index = partIndex(connection.part) else { return unexpected("end of body") }
        if parts[index].end == nil, record.totalLength == nil {
            // No length was ever announced (chunked): the end of the body is the end of the file.
            learnTotal(parts[index].next)
        }
        if parts[index].isComplete { return partDone(id) }
        if connection.pace.progress > 0 {
            // A short answer that still moved us forward: ask for the rest.
            connections[id]?.failures = 0
            return request(id)
        }
        return connectionFailed(id, HaulError(.lengthMismatch, "\(record.request.url): body ended before the announced length"),
                                retryAfter: nil, jitter: jitter)
    }

    /// The request or the body failed (refused, reset, timeout, short body, or closed on request).
    public mutating func transferFailed(_ id: ConnectionID, _ error: HaulError, jitter: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        guard error.isTransient else {
            if connection.isExtra, othersReceiving(besides: id) { return dropConnection(id) }
            return fail(error)
        }
        return connectionFailed(id, error, retryAfter: nil, jitter: jitter)
    }

    public mutating func timerFired(_ timer: Timer) -> [Action] {
        guard state == .downloading, stopStatus == nil else { return [] }
        switch timer {
        case .retry(let id):
            guard connections[id]?.phase == .waiting else { return [] }
            return endLongWait() + request(id)
        case .moreConnections:
            moreConnectionsScheduled = false
            connectionLimit = min(record.request.connections, max(connectionLimit, activeConnections) + 1)
            return openMoreConnections()
        }
    }

    // MARK: Planning

    mutating func openFirstConnection() -> [Action] {
        guard let index = parts.firstIndex(where: { !$0.isComplete }) else { return beginVerify() }
        let id = newConnection(part: index, isExtra: false)
        return request(id)
    }

    /// Opens connections up to the limit while there is work for them: parts nobody works on
    /// first, then an even split of the largest remaining part.
    mutating func openMoreConnections() -> [Action] {
        guard rangesProven, state == .downloading, stopStatus == nil, !restartPending, record.totalLength != nil else { return [] }
        var actions: [Action] = []
        while activeConnections < connectionLimit, let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
            actions += request(newConnection(part: index, isExtra: true))
        }
        let wanted = connectionLimit - activeConnections
        guard wanted > 0, let largest = largestRunningPart(), let end = parts[largest].end else { return actions }
        let points = SegmentPlanner.splitPoints(next: parts[largest].next, end: end, pieces: wanted + 1,
                                                minimum: settings.minimumSegment)
        guard !points.isEmpty else { return actions }
        let bounds = points + [end + 1]
        parts[largest].end = points[0] - 1
        for (start, next) in zip(bounds, bounds.dropFirst()) {
            parts.append(Part(start: start, end: next - 1, appended: 0, durable: 0, owner: nil))
        }
        parts.sort { $0.start < $1.start }
        for start in points {
            actions += request(newConnection(part: partIndex(start)!, isExtra: true))
        }
        // The new parts reach the store with the next checkpoint, in the same write as the
        // shortened part (DESIGN rule 2). Until then the stored layout is the old one, which
        // claims only durable bytes: a crash re-fetches the new parts' bytes, nothing worse.
        // Not storing here keeps an fsync of the store off the path of every new request.
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
        if stopStatus == nil, rangesProven, activeConnections <= connectionLimit {
            if let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
                assign(id, to: index)
                return request(id)
            }
            if let stolen = steal(for: id) {
                return request(stolen)  // stored with the next checkpoint, as a split
            }
        }
        connections[id] = nil
        return finishStopIfClosed()
    }

    /// Takes the tail of the running part that would finish last, cut so that both finish
    /// together. Returns the connection, now assigned to the new part.
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
        // An owner with a measured speed that finishes soon keeps its part.
        if ownerSpeed != nil, best.finish < settings.minimumStealSeconds { return nil }
        // A connection still waiting for its answer keeps half: it has not shown its speed yet.
        let ownerReceiving = connections[owner]?.phase == .receiving
        guard let cut = SegmentPlanner.stealPoint(next: parts[best.index].next, end: end,
                                                  ownerSpeed: ownerReceiving ? ownerSpeed : nil,
                                                  thiefSpeed: ownerReceiving ? mySpeed : nil,
                                                  minimum: settings.minimumSteal),
              // A part keeps at least its first byte: two parts never share a start.
              cut > parts[best.index].start
        else { return nil }
        parts[best.index].end = cut - 1
        parts.insert(Part(start: cut, end: end, appended: 0, durable: 0, owner: nil), at: best.index + 1)
        assign(id, to: best.index + 1)
        return id
    }

    // MARK: Requests

    mutating func newConnection(part index: Int, isExtra: Bool) -> ConnectionID {
        let id = nextConnectionID
        nextConnectionID += 1
        connections[id] = Connection(phase: .waiting, part: parts[index].start, isExtra: isExtra)
        parts[index].owner = id
        return id
    }

    mutating func assign(_ id: ConnectionID, to index: Int) {
        connections[id]?.part = parts[index].start
        connections[id]?.speed = nil
        parts[index].owner = id
    }

    /// The request for the rest of `connection`'s part.
    mutating func request(_ id: ConnectionID) -> [Action] {
        guard state == .downloading, stopStatus == nil, let connection = connections[id],
              let index = partIndex(connection.part) else { return [] }
        let part = parts[index]
        if part.isComplete { return partDone(id) }
        var start = part.next
        // No validator to send in If-Range: re-read some bytes before the resume point instead.
        if part.appended > 0, record.validator?.ifRangeValue == nil {
            start -= min(settings.overlap, part.appended)
        }
        let wholeFile = start == 0 && part.end == nil && record.request.connections == 1
        // With several connections the first request asks for `bytes=0-`: a 206 proves ranges.
        let range: ByteRange? = wholeFile ? nil : ByteRange(start: start, end: part.end)
        let plan = RequestPlan(
            url: record.request.url,
            range: range,
            ifRange: range == nil ? nil : record.validator?.ifRangeValue,
            headers: record.request.headers,
            credentials: record.request.credentials,
            allowsHTTP2: settings.httpVersions.allowsHTTP2(connections: record.request.connections))
        connections[id]?.phase = .requesting(plan)
        connections[id]?.received = 0
        connections[id]?.bytesAtLastTick = 0
        connections[id]?.pace = Pace()
        return [.request(id, plan)]
    }

    // MARK: Failures

    /// Lets a connection go; its part waits for another one.
    mutating func dropConnection(_ id: ConnectionID) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if let index = partIndex(connection.part), parts[index].owner == id { parts[index].owner = nil }
        connections[id] = nil
        var actions: [Action] = [.close(id), .cancelTimer(.retry(id))]
        if activeConnections == 0, stopStatus == nil, state == .downloading,
           let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete }) {
            actions += request(newConnection(part: index, isExtra: false))
        }
        return actions
    }

    /// The entity changed: every connection stops, and once they have, the download starts
    /// over on the new entity with its new length. `answered` is a connection whose response
    /// showed it: that report was its last (its body is never read).
    mutating func startOver(reason: String, cause: RestartCause, answered: ConnectionID? = nil) -> [Action] {
        if let answered { connections[answered] = nil }
        restarts += 1
        let allowed = record.request.maxAttempts ?? settings.retry.maxAttempts
        guard restarts <= allowed * 2 else {
            return fail(HaulError(.badResponse, "\(record.request.url) keeps changing on the server; giving up"))
        }
        restartPending = true
        resetEntity()
        return [.notify(.restarted(reason: reason, cause: cause))] + closeEverything() + restartIfClosed()
    }

    mutating func restartIfClosed() -> [Action] {
        guard restartPending, connections.isEmpty else { return [] }
        restartPending = false
        if stopStatus != nil { return finishStopIfClosed() }
        connectionLimit = max(1, record.request.connections)
        // Stored before the file is cut: the store never claims bytes the file lacks.
        return [.persist, .truncate(to: 0)] + openFirstConnection()
    }

    // MARK: Closing

    /// Asks every connection to stop and cancels every timer.
    mutating func closeEverything() -> [Action] {
        var actions: [Action] = []
        for id in connections.keys.sorted() {
            guard var connection = connections[id] else { continue }
            switch connection.phase {
            case .requesting, .receiving:
                connection.phase = .closing
                connections[id] = connection
                actions.append(.close(id))
            case .waiting:
                connections[id] = nil
                actions.append(.cancelTimer(.retry(id)))
            case .closing:
                break
            }
        }
        for index in parts.indices { parts[index].owner = nil }
        if moreConnectionsScheduled {
            moreConnectionsScheduled = false
            actions.append(.cancelTimer(.moreConnections))
        }
        return actions
    }

    /// The last report from a connection told to close.
    mutating func closed(_ id: ConnectionID) -> [Action] {
        if let retry = retryAfterClose(id) { return retry }
        connections[id] = nil
        if restartPending { return restartIfClosed() }
        if state == .verifying, connections.isEmpty, verifyPending { return beginVerify() }
        return finishStopIfClosed()
    }

    /// Once no connection is left, a requested stop checkpoints, stores its status and ends.
    mutating func finishStopIfClosed() -> [Action] {
        guard stopStatus != nil, connections.isEmpty, state == .downloading || state == .idle else { return [] }
        return stopNow()
    }

    mutating func stopNow() -> [Action] {
        record.status = stopStatus ?? .queued
        state = .stopped
        return [.checkpoint(epoch: epoch), .persist, .finish]
    }

    /// All bytes are in: verification waits for the connections told to close.
    mutating func beginVerifyWhenClosed() -> [Action] {
        state = .verifying
        if connections.isEmpty { return beginVerify() }
        verifyPending = true
        return []
    }

    // MARK: Queries

    func partIndex(_ start: Int64) -> Int? {
        // Parts are few (one per connection plus finished ones) and sorted by start.
        var low = 0
        var high = parts.count - 1
        while low <= high {
            let middle = (low + high) / 2
            if parts[middle].start == start { return middle }
            if parts[middle].start < start { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    func largestRunningPart() -> Int? {
        var best: (index: Int, remaining: Int64)?
        for (index, part) in parts.enumerated() where !part.isComplete {
            guard let remaining = part.remaining else { continue }
            if best == nil || remaining > best!.remaining { best = (index, remaining) }
        }
        return best?.index
    }

    /// Before the first byte: the name, then the record (name, validator, length) is stored.
    /// A later response that tells nothing new (the same validator, length and final URL) stores
    /// nothing: the record already holds what a resume needs.
    mutating func prepareBody(head: ResponseHead) -> [Action] {
        let entity = StoredEntity(validator: record.validator, totalLength: record.totalLength, finalURL: record.finalURL)
        if record.fileName == nil {
            storedEntity = entity
            return [.nameFile(contentDisposition: head.headers["Content-Disposition"], finalURL: head.url), .persist]
        }
        guard entity != storedEntity else { return [] }
        storedEntity = entity
        return [.persist]
    }

    func othersReceiving(besides id: ConnectionID) -> Bool {
        connections.contains { $0.key != id && $0.value.phase == .receiving }
    }

    func medianSpeed() -> Double? {
        let speeds = connections.values.compactMap(\.speed).sorted()
        return speeds.isEmpty ? nil : speeds[speeds.count / 2]
    }

    mutating func learnTotal(_ total: Int64) {
        record.totalLength = total
        let lastByte = total - 1
        for index in parts.indices where parts[index].end == nil || parts[index].end! > lastByte {
            parts[index].end = lastByte
        }
    }
}
