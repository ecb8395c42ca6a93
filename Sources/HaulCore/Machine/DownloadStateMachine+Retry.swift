/// What a retry counts, and when a connection gives up: failures, progress, the server's
/// `Retry-After`, refusals of extra connections, and the low-speed rule.
///
/// **Progress** is bytes that moved the download's kept position past the furthest it ever
/// reached in this run. Bytes written again after a start-over (a 200 to a range request, a
/// changed file) are not progress until they pass the bytes that were thrown away
/// (`refetchDebt`), so a server that answers every try with the start of the file and then breaks
/// cannot keep the retry count at 1 forever. An attempt with progress resets its connection's
/// count of failures, except one that ended because the server broke the framing of its body
/// (`brokenFraming`) or was too slow (the low-speed rule): those count whatever they brought,
/// so a server that drips a byte, or a byte and a broken chunk, per try runs out of tries.
///
/// A 200 to one of several range requests, the file unchanged, uses no try while the download
/// moves: other connections brought bytes since this connection last failed (`rangeIgnored`).
extension DownloadStateMachine {
    /// Per-connection bookkeeping of progress and speed (`Connection.pace`).
    struct Pace: Hashable, Sendable {
        /// Bytes of the current attempt that were progress (see the type's comment).
        var progress: Int64 = 0
        /// When the low-speed window of the current attempt began, and the connection's
        /// `received` then; nil until the first tick that sees it receiving.
        var windowStart: Double?
        var windowBytes: Int64 = 0
        /// Set when the machine closed the connection for being too slow: once it has stopped,
        /// this failure is counted and a retry follows.
        var closedFor: HaulError?
    }

    // MARK: Progress

    /// `keep` bytes were accepted for writing: how many of them are progress.
    mutating func progress(kept keep: Int64) -> Int64 {
        let again = min(keep, refetchDebt)
        refetchDebt -= again
        progressInRun += keep - again
        return keep - again
    }

    /// Every kept byte is about to be thrown away (a start-over while downloading): the next
    /// ones up to the same count are no progress.
    mutating func forgetKeptBytes() {
        if isDownloading { refetchDebt += completedLength }
    }

    // MARK: Failures

    /// A server that answers some range requests with the whole file (every second one, say):
    /// a 200 to one of several range requests, the file unchanged. While other connections bring
    /// bytes the answer uses no try, or such a server would use up a connection's tries by chance
    /// and fail the download while its other connections fetch it (issue 45). With no byte
    /// between two of them it is a failure like any other: a server that ignores every range
    /// request still runs out of tries, and a connection alone on it gets the next answer.
    mutating func rangeIgnored(_ id: ConnectionID, url: RemoteURL, jitter: Double) -> [Action] {
        let error = HaulError(.badResponse, "\(url): the server ignored a range request")
        let moved = connections[id].map { progressInRun > $0.progressAtFailure } ?? false
        return connectionFailed(id, error, retryAfter: nil, jitter: jitter, usesTry: !moved)
    }

    /// The attempt on `id` failed: retry after a backoff, or give up once the attempts without
    /// progress reach the limit. `countsProgress` is false for failures that progress does not
    /// excuse (broken framing, too slow); `usesTry` is false for one that is retried without
    /// counting (`rangeIgnored`).
    mutating func connectionFailed(
        _ id: ConnectionID, _ error: HaulError, retryAfter: Duration?, jitter: Double,
        countsProgress: Bool = true, usesTry: Bool = true
    ) -> [Action] {
        guard var connection = connections[id] else { return [] }
        if connection.pace.progress > 0, countsProgress, error.code != .brokenFraming { connection.failures = 0 }
        connection.pace = Pace()
        connection.received = 0
        connection.progressAtFailure = progressInRun
        guard usesTry else {
            // The retry this would be, not counted: the next failure is numbered the same.
            connection.phase = .waiting
            connections[id] = connection
            let delay = settings.retry.delay(afterFailures: connection.failures + 1, retryAfter: nil, jitter: jitter)
            return [
                .notify(.retrying(attempt: connection.failures + 1, delay: delay, error: error)),
                .schedule(.retry(id), after: delay),
            ]
        }
        connection.failures += 1
        connection.phase = .waiting
        connections[id] = connection
        if let retryAfter, retryAfter > settings.retry.maxRetryAfter {
            return serverAsksForLongWait(id, error, retryAfter: retryAfter)
        }
        let allowed = record.request.maxAttempts ?? settings.retry.maxAttempts
        guard connection.failures < allowed else {
            if othersReceiving(besides: id) { return dropConnection(id) }
            return fail(error)
        }
        let delay = settings.retry.delay(afterFailures: connection.failures, retryAfter: retryAfter, jitter: jitter)
        return [
            .notify(.retrying(attempt: connection.failures, delay: delay, error: error)),
            .schedule(.retry(id), after: delay),
        ]
    }

    /// The server asked to be tried again later than `settings.retry.maxRetryAfter`. With
    /// `waitsForLongRetryAfter` (the daemon) the download waits that long, the time shown in its
    /// record's error; otherwise (`haul get`) it fails now, naming the time. Another working
    /// connection keeps the download going without this one.
    mutating func serverAsksForLongWait(_ id: ConnectionID, _ error: HaulError, retryAfter: Duration) -> [Action] {
        if othersReceiving(besides: id) { return dropConnection(id) }
        let seconds = retryAfter.components.seconds
        let when = lastNowSince1970.map { " (at \(HTTPDate.iso8601($0 + seconds)))" } ?? ""
        let asked = "the server asks to be tried again in \(seconds) s\(when)"
        if settings.retry.waitsForLongRetryAfter {
            record.error = HaulError(error.code, "\(error.message): waiting: \(asked)", httpStatus: error.httpStatus)
            return [
                .persist, .notify(.retrying(attempt: connections[id]?.failures ?? 1, delay: retryAfter, error: error)),
                .schedule(.retry(id), after: retryAfter),
            ]
        }
        let limit = settings.retry.maxRetryAfter.components.seconds
        return fail(
            HaulError(
                error.code, "\(error.message): \(asked), longer than the \(limit) s haul waits",
                httpStatus: error.httpStatus, cause: error.cause))
    }

    /// A retry after a long wait is due: the record no longer says it waits.
    mutating func endLongWait() -> [Action] {
        guard record.error != nil else { return [] }
        record.error = nil
        return [.persist]
    }

    /// A server refused an extra connection (503, 429): not an error. Keep the ones that work,
    /// and try one more only after the server's `Retry-After`, or a backoff that doubles with
    /// every refusal: never hammer.
    mutating func refused(_ id: ConnectionID, _ error: HaulError, retryAfter: Duration?) -> [Action] {
        refusals += 1
        stopGrowing()
        var actions = dropConnection(id)
        connectionLimit = max(1, activeConnections)
        let delay = connectionBackoff(retryAfter: retryAfter)
        actions.append(.notify(.connectionRefused(id, error, retryIn: delay)))
        if !moreConnectionsScheduled {
            moreConnectionsScheduled = true
            actions.append(.schedule(.moreConnections, after: delay))
        }
        return actions
    }

    /// The server's `Retry-After`, else a backoff that doubles with every refusal.
    func connectionBackoff(retryAfter: Duration?) -> Duration {
        let exponent = min(max(refusals - 1, 0), 16)
        let backoff = min(settings.retry.baseDelay * (1 << exponent) * 2, settings.maxConnectionBackoff)
        return min(retryAfter.map { max($0, .milliseconds(100)) } ?? backoff, settings.retry.maxRetryAfter)
    }

    // MARK: The low-speed rule

    /// curl's `--speed-limit`/`--speed-time`: a connection whose bytes, averaged since its window
    /// began, stay under `retry.speedLimit` per second for `retry.speedTime` ends its attempt as a
    /// failure (its bytes kept, but not counted as progress). With other connections at work its
    /// part goes back to the pool at once, for a connection that is free or a new one, as a
    /// steal at the current position would. A window restarts whenever the average since its
    /// start reaches the limit.
    mutating func enforceSpeedLimit(now: Double) -> [Action] {
        let limit = Double(settings.retry.speedLimit)
        let window = settings.retry.speedTime.seconds
        guard limit > 0, window > 0 else { return [] }
        var actions: [Action] = []
        for id in connections.keys.sorted() {
            guard let connection = connections[id], connection.phase == .receiving else { continue }
            var pace = connection.pace
            guard let start = pace.windowStart else {
                pace.windowStart = now
                pace.windowBytes = connection.received
                connections[id]?.pace = pace
                continue
            }
            let elapsed = now - start
            let bytes = Double(connection.received - pace.windowBytes)
            if elapsed > 0, bytes >= limit * elapsed {
                pace.windowStart = now
                pace.windowBytes = connection.received
                connections[id]?.pace = pace
                continue
            }
            guard elapsed >= window else { continue }
            actions += tooSlow(id, bytesPerSecond: elapsed > 0 ? bytes / elapsed : 0)
        }
        return actions
    }

    mutating func tooSlow(_ id: ConnectionID, bytesPerSecond: Double) -> [Action] {
        let error = HaulError(
            .network,
            "\(record.request.url): too slow: \(Int64(bytesPerSecond)) bytes/s, under the "
                + "\(settings.retry.speedLimit) bytes/s allowed, for \(Self.seconds(settings.retry.speedTime.seconds))")
        guard othersReceiving(besides: id) else {
            // The failure is counted once the connection has stopped (`retryAfterClose`).
            connections[id]?.phase = .closing
            connections[id]?.pace.closedFor = error
            return [.close(id)]
        }
        var actions = dropConnection(id)
        if isDownloading, stopRequest == nil, connections.count < limit,
            let index = parts.firstIndex(where: { $0.owner == nil && !$0.isComplete })
        {
            actions += request(newConnection(part: index, isExtra: true))
        }
        return actions
    }

    /// The last report of a connection closed for being too slow: count the failure and retry,
    /// unless the download is stopping or starting over. Nil for any other closed connection.
    mutating func retryAfterClose(_ id: ConnectionID) -> [Action]? {
        guard let error = connections[id]?.pace.closedFor else { return nil }
        connections[id]?.pace.closedFor = nil
        guard isFetching else { return nil }
        return connectionFailed(id, error, retryAfter: nil, jitter: 0.5, countsProgress: false)
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int64(value)) s" : "\(value) s"
    }
}
