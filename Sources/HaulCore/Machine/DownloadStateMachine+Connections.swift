/// The connections of one download: what each chunk, end of body and failure means for the
/// bytes, failures, start-overs and stopping. What a response head means is in `+Response`; which
/// bytes each connection asks for next is in `+Pieces`.
extension DownloadStateMachine {
    // MARK: Connection events

    /// A chunk of `count` bytes arrived on `connection`: where its bytes go. The hot path: no
    /// allocation, one dictionary lookup.
    public mutating func received(_ id: ConnectionID, count: Int) -> Accepted {
        guard var connection = connections[id], connection.phase == .receiving, let index = partIndex(connection.part)
        else {
            return .nothing
        }
        if connection.probing { return probeReceived(id, count: count) }
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
        let keep = min(
            left, part.remaining ?? Int64.max, connection.requestedEnd.map { $0 - part.next + 1 } ?? Int64.max)
        let writeOffset = part.next - fileBase
        if pieceLength != nil { notePieceWriter(source: connection.source, offset: writeOffset, count: keep) }
        part.appended += keep
        connection.received += keep
        connection.pace.progress += progress(kept: keep)
        parts[index] = part
        connections[id] = connection
        // Stop reading only when the body would bring bytes nobody needs: one that ends where
        // its part ends is read to its end, and its connection goes back to the pool.
        let bodyEnd = connection.requestedEnd ?? record.totalLength.map { $0 - 1 }
        let stop = keep < left || (part.isComplete && (bodyEnd ?? Int64.max) > (part.end ?? Int64.max))
        var accepted = Accepted(
            skip: Int(skip), compare: Int(compare), compareOffset: compareOffset - fileBase, keep: Int(keep),
            writeOffset: writeOffset, part: part.start, partComplete: stop)
        accepted.noteDue = noteDue(after: keep)
        return accepted
    }

    /// The overlap compared after a resume without a validator did not match the disk. The
    /// connection has stopped: this is its last report.
    public mutating func overlapMismatch(_ id: ConnectionID) -> [Action] {
        if connections[id]?.phase == .closing { return closed(id) }
        if let connection = connections[id], sources.count > 1,
            connection.probing || sources.othersRemain(besides: connection.source)
        {
            if let index = partIndex(connection.part), parts[index].owner == id, !connection.probing {
                // Its bytes past the overlap were never written: the part is as it was.
                parts[index].owner = nil
            }
            return sourceLied(id, reason: "serves other bytes than the download has")
        }
        guard connections.removeValue(forKey: id) != nil else { return [] }
        if let index = parts.firstIndex(where: { $0.owner == id }) { parts[index].owner = nil }
        return startOver(
            reason: "the file on the server is not the one the .part came from; starting over", cause: .overlapMismatch)
    }

    /// The body ended (cleanly, or because `received` said the part was complete).
    public mutating func bodyEnded(_ id: ConnectionID, jitter: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        guard connection.phase == .receiving, let index = partIndex(connection.part) else {
            return unexpected("end of body")
        }
        if connection.probing { return probeEnded(id, jitter: jitter) }
        if parts[index].end == nil, record.totalLength == nil {
            // No length was ever announced (chunked): the end of the body is the end of the file.
            learnTotal(parts[index].next)
        }
        if parts[index].isComplete { return partDone(id) }
        if let requestedEnd = connection.requestedEnd, parts[index].next > requestedEnd {
            // The piece is in, and the connection is free for the next one.
            if connection.pace.progress > 0 { connections[id]?.failures = 0 }
            return pieceDone(id)
        }
        if connection.pace.progress > 0 {
            // A short answer that still moved us forward: ask for the rest.
            connections[id]?.failures = 0
            return request(id)
        }
        return connectionFailed(
            id, HaulError(.lengthMismatch, "\(record.request.url): body ended before the announced length"),
            retryAfter: nil, jitter: jitter)
    }

    /// A connection told to close (`.close`) had nothing running, so nothing else will report:
    /// it has stopped. A connection the machine already let go has nothing to report.
    public mutating func connectionClosed(_ id: ConnectionID) -> [Action] {
        guard let connection = connections[id] else { return [] }
        guard connection.phase == .closing else { return unexpected("report of a closed connection") }
        return closed(id)
    }

    /// The request or the body failed (refused, reset, timeout, short body, or closed on request).
    public mutating func transferFailed(_ id: ConnectionID, _ error: HaulError, jitter: Double) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        if let moved = sourceFailed(id, error, retryAfter: nil, jitter: jitter) { return moved }
        guard error.isTransient else {
            if connection.isExtra, othersReceiving(besides: id) { return dropConnection(id) }
            return fail(error)
        }
        return connectionFailed(id, error, retryAfter: nil, jitter: jitter)
    }

    /// A timer the machine scheduled fired. A retry asks again on its connection; `moreConnections`
    /// allows one connection more and opens what the limit now lets it. Ignored while a stop is
    /// under way or once the download no longer downloads.
    public mutating func timerFired(_ timer: Timer) -> [Action] {
        guard isDownloading, stopRequest == nil else { return [] }
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

    // MARK: Failures

    /// Lets a connection go; its part waits for another one.
    mutating func dropConnection(_ id: ConnectionID) -> [Action] {
        guard let connection = connections[id] else { return [] }
        if let index = partIndex(connection.part), parts[index].owner == id { parts[index].owner = nil }
        connections[id] = nil
        var actions: [Action] = [.close(id), .cancelTimer(.retry(id))]
        if activeConnections == 0, stopRequest == nil, isDownloading,
            let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete })
        {
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
        resetEntity()
        let notice = Action.notify(.restarted(reason: reason, cause: cause))
        // A stop under way stays one: it ends once the connections have closed.
        guard stopRequest == nil else { return [notice] + closeEverything() + finishStopIfClosed() }
        state = .restarting
        return [notice] + closeEverything() + restartIfClosed()
    }

    mutating func restartIfClosed() -> [Action] {
        guard state == .restarting, connections.isEmpty else { return [] }
        state = .downloading
        connectionLimit = max(1, record.request.connections)
        beginGrowth()
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
        switch state {
        case .restarting:
            return restartIfClosed()
        case .closingForVerify(let stop) where connections.isEmpty:
            // A remove that came meanwhile ends the run before anything is verified.
            return stop == .removed ? stopNow(.removed) : beginVerify()
        default:
            return finishStopIfClosed()
        }
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

    /// Before the first byte: the name, then the record (name, validator, length) is stored.
    /// A later response that tells nothing new (the same validator, length and final URL) stores
    /// nothing: the record already holds what a resume needs.
    mutating func prepareBody(head: ResponseHead) -> [Action] {
        let entity = StoredEntity(
            validator: record.validator, totalLength: record.totalLength, finalURL: record.finalURL,
            digest: record.serverDigest)
        if record.fileName == nil {
            storedEntity = entity
            // A final URL that does not parse (the transport gives what the server sent) names
            // nothing, and its error says only that: the request's URL names the file instead.
            let finalURL = (try? RemoteURL(head.url)) ?? record.request.url
            return [.nameFile(contentDisposition: head.headers["Content-Disposition"], finalURL: finalURL), .persist]
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
