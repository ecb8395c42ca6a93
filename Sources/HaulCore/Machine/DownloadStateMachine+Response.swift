/// What a response head means for one connection of a download: the bytes it brings, a failure,
/// a start-over, or a source that lied. What the connection's body then does is in
/// `+Connections`.
extension DownloadStateMachine {
    /// A response head arrived for `connection`'s last `.request`.
    public mutating func responseReceived(
        _ id: ConnectionID, _ head: ResponseHead, nowSecondsSince1970: Int64,
        jitter: Double
    ) -> [Action] {
        guard var connection = connections[id] else { return [] }
        if connection.phase == .closing { return closed(id) }
        guard case .requesting(let plan) = connection.phase, let index = partIndex(connection.part) else {
            return unexpected("response")
        }
        let source = connection.source
        if source == 0 || record.finalURL == nil { record.finalURL = head.url }
        lastNowSince1970 = nowSecondsSince1970
        let part = parts[index]
        let verdict = ResponseCheck.evaluate(
            head, asked: plan, next: part.next, partEnd: part.end, resuming: part.appended > 0,
            requested: record.request.range,
            validator: connection.probing ? nil : compared(sourceRequest(source).validator),
            total: record.totalLength, nowSecondsSince1970: nowSecondsSince1970)
        if let expired = loginRedirect(head, plan: plan) {
            if let moved = sourceFailed(id, expired, retryAfter: nil, jitter: jitter) { return moved }
            return connection.probing ? sourceLied(id, reason: expired.message) : urlExpired(expired)
        }
        if connection.probing {
            if case .partial = verdict, let reason = digestDisagreement(head) {
                return sourceLied(id, reason: "serves another file (\(reason))")
            }
            return probeAnswered(id, verdict, plan: plan, jitter: jitter)
        }
        noteEntityTime(head)
        switch verdict {
        case .notModified:
            return notModified()

        case .partial(let start, let end, let total, let validator):
            if let reason = digestDisagreement(head) {
                return digestChanged(reason, answered: id, source: source, cause: .digestChanged)
            }
            learnDigest(head)
            if source == 0 { record.validator = validator } else { sources[source].validator = validator }
            // The first to answer a download with nothing on disk is its reference.
            if !sources.anyProven { sources.prove(source) }
            if let total, record.totalLength == nil { learnTotal(total) }
            connection.phase = .receiving
            connection.received = 0
            connection.bytesAtLastTick = 0
            connection.requestedEnd = end
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
            if let again = ifRangeMishandled(id, plan: plan, length: length, validator: validator) { return again }
            if sources.count > 1, sources.othersRemain(besides: source),
                connections.count > 1 || connection.isExtra || sources.anyProven
            {
                return sourceLied(
                    id, reason: "answered 200 to a range request (it ignores ranges, or its file changed)")
            }
            if connections.count > 1 || connection.isExtra {
                // A 200 to one of several range requests: the server ignores ranges after all,
                // or the entity changed between connections. Nothing from it is written.
                if let validator, let known = record.validator, known.conflicts(with: validator) {
                    return startOver(
                        reason: "the file changed on the server between connections", cause: .changedBetweenConnections,
                        answered: id)
                }
                if let length, let total = record.totalLength, length != total {
                    return startOver(
                        reason: "the file changed length on the server between connections",
                        cause: .changedBetweenConnections, answered: id)
                }
                if let reason = digestDisagreement(head) {
                    return startOver(
                        reason: "the file changed on the server between connections (\(reason))",
                        cause: .changedBetweenConnections, answered: id)
                }
                return rangeIgnored(id, url: plan.url, jitter: jitter)
            }
            let hadBytes = completedLength > 0
            // The whole entity from byte 0: nothing remembered about an earlier one survives,
            // least of all its length.
            resetEntity()
            record.validator = validator
            learnDigest(head)
            if let length { learnTotal(length) }
            connection.phase = .receiving
            connection.received = 0
            connection.bytesAtLastTick = 0
            connection.part = parts[0].start
            connection.requestedEnd = nil
            connection.skip = record.request.range?.start ?? 0
            connection.compare = 0
            connections[id] = connection
            parts[0].owner = id
            var actions: [Action] = []
            if hadBytes {
                actions.append(
                    .notify(.restarted(reason: "the server sent the whole file; starting over", cause: .rangesIgnored)))
            }
            actions += prepareBody(head: head) + [.truncate(to: 0), .receive(id)]
            // A resume refused by If-Range from a server that announces ranges: the new entity
            // can still be split.
            if plan.ifRange != nil, head.headers["Accept-Ranges"]?.lowercased() == "bytes", length != nil,
                validator?.ifRangeValue != nil
            {
                rangesProven = true
                actions += openMoreConnections()
            }
            return actions

        case .alreadyComplete(let total):
            if record.totalLength == nil { learnTotal(total) }
            parts[index].appended = max(
                parts[index].appended, (parts[index].end ?? (total - 1)) - parts[index].start + 1)
            return partDone(id)

        case .entityChanged:
            if let again = etagUnstable(id, head: head) { return again }
            if sources.count > 1, sources.othersRemain(besides: source) {
                return sourceLied(id, reason: "serves another file (its length or validator differs)")
            }
            return startOver(
                reason: "\(plan.url) changed on the server; starting over", cause: .changedOnServer, answered: id)

        case .retry(let error, let retryAfter):
            if let moved = sourceFailed(id, error, retryAfter: retryAfter, jitter: jitter) { return moved }
            if connection.isExtra, error.httpStatus == 503 || error.httpStatus == 429, othersReceiving(besides: id) {
                return refused(id, error, retryAfter: retryAfter)
            }
            return connectionFailed(id, error, retryAfter: retryAfter, jitter: jitter)

        case .fail(let error):
            if let moved = sourceFailed(id, error, retryAfter: nil, jitter: jitter) { return moved }
            if let status = error.httpStatus, [401, 403, 410].contains(status), head.url != plan.url.absoluteString {
                // Refused where a redirect led (a CDN's signed URL, expired between the redirect
                // and the request): the download's own URL, asked again, redirects to a fresh
                // one. A retry, counted as any other; never an expiry of the URL itself.
                return connectionFailed(
                    id,
                    HaulError(
                        .httpStatus,
                        "\(head.url) (where \(plan.url) redirected): HTTP \(status)\(ResponseCheck.reason(status)); "
                            + "asking \(plan.url) again for a fresh redirect", httpStatus: status),
                    retryAfter: nil, jitter: jitter)
            }
            if connection.isExtra, othersReceiving(besides: id) {
                // Some servers answer 403 past their connection limit: keep the ones that work.
                return refused(id, error, retryAfter: nil)
            }
            if let status = error.httpStatus, [401, 403, 410].contains(status), completedLength > 0 {
                return urlExpired(
                    HaulError(
                        .urlExpired,
                        "\(plan.url): HTTP \(status)\(ResponseCheck.reason(status)) after "
                            + "\(completedLength) bytes had arrived: the URL has probably expired; the bytes are kept, and a new URL "
                            + "for the same file continues the download", httpStatus: status))
            }
            return fail(error)
        }
    }
}
