/// One download's life as a value: events in, actions out, no I/O (DESIGN rule 1). The runner
/// in `Haul` performs each action and reports back with the next event; tests drive it with
/// plain values.
///
/// The machine works on `record.segments[0]`: one connection, one segment. Several connections
/// per file will add segment planning here, not a second model.
public struct DownloadStateMachine: Sendable {
    public enum State: Hashable, Sendable {
        /// Not started in this process; `record.status` says why (queued, paused, ...).
        /// Moves to: requesting, verifying (everything already on disk), stopped.
        case idle
        /// A request is in flight. Moves to: receiving, verifying (416, nothing left),
        /// requesting (entity changed), waitingToRetry, failed, stopped.
        case requesting
        /// Body bytes are flowing to disk. Moves to: verifying, requesting (more to fetch),
        /// waitingToRetry, failed, stopped.
        case receiving
        /// Backing off after a failure. Moves to: requesting, stopped.
        case waitingToRetry
        /// Every byte is on disk; length and checksum are being checked. Moves to: completed, failed.
        case verifying
        /// Terminal for this run: completed, failed, or stopped with the status it was given.
        case completed
        case failed
        case stopped
    }

    public enum Action: Hashable, Sendable {
        /// Send this request.
        case request(RequestPlan)
        /// Persist the record (name, validator, length), truncate the `.part` file to
        /// `plan.fileOffset`, then stream the body into it as the plan says.
        case receive(BodyPlan)
        /// Wait, then send `retryTimerFired`.
        case retry(after: Duration)
        /// Checkpoint, then check length and checksum and report `verified`.
        case verify
        /// Move `.part` to its final name and persist the record as completed.
        case complete
        /// Persist the record as failed with this error; keep the `.part` for a later retry.
        case fail(HaulError)
        /// Checkpoint and persist the record with the status it now has (paused, queued, removed).
        case stop
    }

    public private(set) var record: DownloadRecord
    public private(set) var state: State = .idle
    public let policy: RetryPolicy
    /// Consecutive attempts that received no byte.
    public private(set) var failuresWithoutProgress = 0
    /// Why the last attempt failed: what a `.retry` is retrying after.
    public private(set) var lastFailure: HaulError?
    private var receivedThisAttempt: Int64 = 0
    private var lastPlan: RequestPlan?

    public init(record: DownloadRecord, policy: RetryPolicy) {
        self.record = record
        self.policy = policy
    }

    var segment: Segment {
        get { record.segments[0] }
        set { record.segments[0] = newValue }
    }

    // MARK: Events

    /// Begin (or continue) this download.
    public mutating func start() -> Action {
        record.status = .running
        record.error = nil
        failuresWithoutProgress = 0
        if segment.isComplete {
            state = .verifying
            return .verify
        }
        return nextRequest()
    }

    /// A response head arrived for the last `.request`.
    public mutating func responseReceived(_ head: ResponseHead, nowSecondsSince1970: Int64, jitter: Double) -> Action {
        guard state == .requesting, let plan = lastPlan else { return unexpected("response") }
        record.finalURL = head.url
        let verdict = ResponseCheck.evaluate(head, asked: plan, segment: segment, validator: record.validator,
                                             total: record.totalLength, nowSecondsSince1970: nowSecondsSince1970)
        switch verdict {
        case .body(let body, let total, let validator, let restarted):
            if restarted || body.fileOffset == 0 { segment.written = 0 }
            record.validator = validator
            if let total { learnTotal(total) }
            receivedThisAttempt = 0
            state = .receiving
            return .receive(body)
        case .alreadyComplete(let total):
            learnTotal(total)
            state = .verifying
            return .verify
        case .entityChanged:
            record.resetEntity()
            return failure(HaulError(.badResponse, "\(plan.url) changed on the server; starting over"),
                           retryAfter: .zero, jitter: jitter)
        case .retry(let error, let retryAfter):
            return failure(error, retryAfter: retryAfter, jitter: jitter)
        case .fail(let error):
            return fail(error)
        }
    }

    /// `count` body bytes were written to the `.part` file (not necessarily synced yet).
    public mutating func bytesWritten(_ count: Int64) {
        segment.written += count
        receivedThisAttempt += count
    }

    /// The body ended cleanly.
    public mutating func bodyEnded(jitter: Double) -> Action {
        guard state == .receiving else { return unexpected("end of body") }
        if segment.end == nil, record.totalLength == nil {
            // No length was ever announced (chunked): the end of the body is the end of the file.
            learnTotal(segment.nextOffset)
        }
        if segment.isComplete {
            state = .verifying
            return .verify
        }
        if receivedThisAttempt > 0 {
            // A partial answer (or a short one that still moved us forward): ask for the rest.
            failuresWithoutProgress = 0
            return nextRequest()
        }
        return failure(HaulError(.lengthMismatch, "\(record.request.url): body ended before the announced length"),
                       retryAfter: nil, jitter: jitter)
    }

    /// The request or the body failed (connection refused, reset, timeout, short body).
    public mutating func transferFailed(_ error: HaulError, jitter: Double) -> Action {
        guard state == .requesting || state == .receiving else { return unexpected("failure") }
        guard error.code.isTransient else { return fail(error) }
        return failure(error, retryAfter: nil, jitter: jitter)
    }

    public mutating func retryTimerFired() -> Action {
        guard state == .waitingToRetry else { return unexpected("retry timer") }
        return nextRequest()
    }

    /// Pause, shutdown, cancel: stop now, keeping what is on disk. `status` is what the record
    /// should say afterwards (paused for a pause, queued or running for a shutdown that should
    /// resume by itself, removed for a cancel).
    public mutating func stopRequested(status: DownloadStatus) -> Action {
        record.status = status
        state = .stopped
        return .stop
    }

    /// The result of `.verify`.
    public mutating func verified(_ error: HaulError?) -> Action {
        guard state == .verifying else { return unexpected("verification") }
        if let error {
            // A wrong file is never kept as the basis of a resume.
            record.resetEntity()
            return fail(error)
        }
        record.status = .completed
        state = .completed
        return .complete
    }

    /// Writing or syncing the `.part` failed (disk full, permissions). Only `durableLength`
    /// bytes are known to be on disk; the record keeps no more than that.
    public mutating func diskFailed(_ error: HaulError, durableLength: Int64) -> Action {
        segment.written = min(segment.written, durableLength)
        return fail(error)
    }

    /// The final name was chosen (after the first response, from `Content-Disposition` or the URL).
    public mutating func setFileName(_ name: String) {
        record.fileName = name
    }

    // MARK: Helpers

    private mutating func nextRequest() -> Action {
        let remaining = segment.remaining
        let wholeFile = remaining.start == 0 && remaining.end == nil
        let plan = RequestPlan(
            url: record.request.url,
            range: wholeFile ? nil : remaining,
            ifRange: segment.written > 0 ? record.validator?.ifRangeValue : nil,
            headers: record.request.headers)
        lastPlan = plan
        state = .requesting
        return .request(plan)
    }

    private mutating func failure(_ error: HaulError, retryAfter: Duration?, jitter: Double) -> Action {
        lastFailure = error
        if receivedThisAttempt > 0 { failuresWithoutProgress = 0 }
        receivedThisAttempt = 0
        failuresWithoutProgress += 1
        let allowed = record.request.maxAttempts ?? policy.maxAttempts
        guard failuresWithoutProgress < allowed else { return fail(error) }
        state = .waitingToRetry
        return .retry(after: policy.delay(afterFailures: failuresWithoutProgress, retryAfter: retryAfter, jitter: jitter))
    }

    private mutating func fail(_ error: HaulError) -> Action {
        record.status = .failed
        record.error = error
        state = .failed
        return .fail(error)
    }

    private mutating func learnTotal(_ total: Int64) {
        record.totalLength = total
        let lastByte = total - 1
        if let end = segment.end { segment.end = min(end, lastByte) } else { segment.end = lastByte }
    }

    private mutating func unexpected(_ what: String) -> Action {
        fail(HaulError(.internal, "unexpected \(what) in state \(state)"))
    }
}
