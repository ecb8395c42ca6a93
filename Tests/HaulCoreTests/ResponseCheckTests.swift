import HaulCore
import Testing

@Suite(.timeLimit(.minutes(2))) struct ResponseCheckTests {
    let url = try! RemoteURL("http://h/file")

    func head(_ status: Int, _ headers: HTTPHeaderList = [:]) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://h/file")
    }

    func plan(_ range: ByteRange?) -> RequestPlan {
        RequestPlan(url: url, range: range, ifRange: nil, headers: [:])
    }

    func evaluate(
        _ head: ResponseHead, segment: Segment, validator: EntityValidator? = nil, total: Int64? = nil,
        requested: ByteRange? = nil
    ) -> ResponseCheck.Verdict {
        let asked = segment.nextOffset == 0 && segment.end == nil ? nil : segment.remaining
        return ResponseCheck.evaluate(
            head, asked: plan(asked), next: segment.nextOffset, partEnd: segment.end,
            resuming: segment.written > 0,
            requested: requested, validator: validator, total: total, nowSecondsSince1970: 0)
    }

    @Test func freshFullBody() {
        let verdict = evaluate(head(200, ["Content-Length": "1000", "ETag": "\"v1\""]), segment: Segment(start: 0))
        #expect(verdict == .whole(length: 1000, validator: EntityValidator(etag: "\"v1\"")))
    }

    @Test func resumeTakesTheRangeAsked() {
        let verdict = evaluate(
            head(206, ["Content-Range": "bytes 400-999/1000", "ETag": "\"v1\""]),
            segment: Segment(start: 0, end: 999, written: 400), validator: EntityValidator(etag: "\"v1\""), total: 1000)
        #expect(verdict == .partial(start: 400, end: 999, total: 1000, validator: EntityValidator(etag: "\"v1\"")))
    }

    @Test func twoHundredToARangeRequestIsTheWholeNewEntity() {
        // The length is the one this response announces, never the one remembered from before.
        let verdict = evaluate(
            head(200, ["Content-Length": "2000"]), segment: Segment(start: 0, end: 999, written: 400), total: 1000)
        #expect(verdict == .whole(length: 2000, validator: nil))
    }

    @Test func twoHundredPastTheRequestedRangeFails() {
        let verdict = evaluate(
            head(200, ["Content-Length": "100"]), segment: Segment(start: 100, end: 199),
            requested: ByteRange(start: 100, end: 199))
        guard case .fail(let error) = verdict else {
            Issue.record("got \(verdict)")
            return
        }
        #expect(error.code == .badResponse)
    }

    @Test func mismatchedContentRangeIsNeverAppended() {
        let verdict = evaluate(
            head(206, ["Content-Range": "bytes 300-999/1000"]), segment: Segment(start: 0, end: 999, written: 400),
            total: 1000)
        guard case .retry(let error, _) = verdict else {
            Issue.record("got \(verdict)")
            return
        }
        #expect(error.code == .badResponse)
    }

    @Test func rangeWithoutContentRangeIsRefused() {
        let verdict = evaluate(head(206, ["Content-Length": "600"]), segment: Segment(start: 0, end: 999, written: 400))
        guard case .retry(let error, _) = verdict else {
            Issue.record("got \(verdict)")
            return
        }
        #expect(error.code == .badResponse)
    }

    @Test func changedETagOn206MeansChangedFile() {
        let verdict = evaluate(
            head(206, ["Content-Range": "bytes 400-999/1000", "ETag": "\"v2\""]),
            segment: Segment(start: 0, end: 999, written: 400), validator: EntityValidator(etag: "\"v1\""), total: 1000)
        #expect(verdict == .entityChanged)
    }

    @Test func changedLengthOn206MeansChangedFile() {
        let verdict = evaluate(
            head(206, ["Content-Range": "bytes 400-1999/2000"]), segment: Segment(start: 0, end: 999, written: 400),
            total: 1000)
        #expect(verdict == .entityChanged)
    }

    @Test func rangeNotSatisfiableAtTheLocalLengthIsComplete() {
        let verdict = evaluate(head(416, ["Content-Range": "bytes */1000"]), segment: Segment(start: 0, written: 1000))
        #expect(verdict == .alreadyComplete(total: 1000))
    }

    @Test func rangeNotSatisfiableElsewhereFails() {
        let verdict = evaluate(head(416, ["Content-Range": "bytes */1000"]), segment: Segment(start: 5000, end: 5999))
        guard case .fail(let error) = verdict else {
            Issue.record("got \(verdict)")
            return
        }
        #expect(error.code == .badResponse)
        #expect(error.message.contains("1000 bytes"))
    }

    @Test func serviceUnavailableHonoursRetryAfter() {
        let verdict = evaluate(head(503, ["Retry-After": "7"]), segment: Segment(start: 0))
        #expect(
            verdict
                == .retry(HaulError(.httpStatus, "http://h/file: HTTP 503", httpStatus: 503), retryAfter: .seconds(7)))
    }

    @Test func notFoundFails() {
        guard case .fail(let error) = evaluate(head(404), segment: Segment(start: 0)) else {
            Issue.record("no failure")
            return
        }
        #expect(error.code == .httpStatus)
        #expect(error.httpStatus == 404)
        #expect(error.message == "http://h/file: HTTP 404 Not Found")
    }

    @Test func requestHeadersAskForIdentityAndRange() {
        let plan = RequestPlan(
            url: url, range: ByteRange(start: 10), ifRange: "\"v1\"",
            headers: ["Range": "bytes=0-1", "X-Token": "t"])
        let headers = plan.allHeaders
        #expect(headers["Range"] == "bytes=10-")
        #expect(headers["If-Range"] == "\"v1\"")
        #expect(headers["Accept-Encoding"] == "identity")
        #expect(headers["X-Token"] == "t")
        #expect(headers.fields.filter { $0.name == "Range" }.count == 1)
    }

    @Test func weakETagIsNotUsedForIfRange() {
        #expect(EntityValidator(etag: "W/\"x\"", lastModified: "date").ifRangeValue == "date")
        #expect(EntityValidator(etag: "\"x\"").ifRangeValue == "\"x\"")
        #expect(!EntityValidator(etag: "\"x\"").conflicts(with: EntityValidator(lastModified: "d")))
    }
}
