import HaulCore
import Testing

@Suite struct DownloadStateMachineTests {
    let url = try! RemoteURL("http://h/file")

    func machine(range: ByteRange? = nil, maxAttempts: Int = 3) throws -> DownloadStateMachine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), range: range)
        return DownloadStateMachine(record: DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0),
                                    policy: RetryPolicy(maxAttempts: maxAttempts, baseDelay: .seconds(1)))
    }

    func head(_ status: Int, _ headers: HTTPHeaderList) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://h/file")
    }

    @Test func happyPath() throws {
        var machine = try machine()
        #expect(machine.start() == .request(RequestPlan(url: url, range: nil, ifRange: nil, headers: [:])))
        let action = machine.responseReceived(head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(action == .receive(BodyPlan(fileOffset: 0)))
        machine.bytesWritten(100)
        #expect(machine.bodyEnded(jitter: 0) == .verify)
        #expect(machine.verified(nil) == .complete)
        #expect(machine.record.status == .completed)
        #expect(machine.record.totalLength == 100)
        #expect(machine.record.validator?.etag == "\"a\"")
    }

    @Test func dropResumesWithRangeAndIfRange() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(40)
        #expect(machine.transferFailed(HaulError(.network, "reset"), jitter: 0) == .retry(after: .milliseconds(500)))
        let next = machine.retryTimerFired()
        #expect(next == .request(RequestPlan(url: url, range: ByteRange(start: 40, end: 99), ifRange: "\"a\"", headers: [:])))
        let resumed = machine.responseReceived(head(206, ["Content-Range": "bytes 40-99/100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(resumed == .receive(BodyPlan(fileOffset: 40, limit: 60)))
    }

    @Test func progressResetsTheAttemptCount() throws {
        var machine = try machine(maxAttempts: 2)
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "1000"]), nowSecondsSince1970: 0, jitter: 0)
        for step in 1...8 {
            machine.bytesWritten(100)
            guard case .retry = machine.transferFailed(HaulError(.network, "reset"), jitter: 0) else {
                Issue.record("gave up after \(step) drops that each made progress"); return
            }
            _ = machine.retryTimerFired()
            let offset = Int64(step * 100)
            let action = machine.responseReceived(head(206, ["Content-Range": "bytes \(offset)-999/1000"]), nowSecondsSince1970: 0, jitter: 0)
            #expect(action == .receive(BodyPlan(fileOffset: offset, limit: 1000 - offset)))
        }
    }

    @Test func givesUpAfterAttemptsWithoutProgress() throws {
        var machine = try machine(maxAttempts: 3)
        _ = machine.start()
        #expect(machine.transferFailed(HaulError(.network, "refused"), jitter: 0) == .retry(after: .milliseconds(500)))
        _ = machine.retryTimerFired()
        #expect(machine.transferFailed(HaulError(.network, "refused"), jitter: 0) == .retry(after: .seconds(1)))
        _ = machine.retryTimerFired()
        #expect(machine.transferFailed(HaulError(.network, "refused"), jitter: 0) == .fail(HaulError(.network, "refused")))
        #expect(machine.record.status == .failed)
        #expect(machine.record.error?.code == .network)
    }

    @Test func permanentErrorsAreNotRetried() throws {
        var machine = try machine()
        _ = machine.start()
        #expect(machine.transferFailed(HaulError(.tooManyRedirects, "loop"), jitter: 0) == .fail(HaulError(.tooManyRedirects, "loop")))
    }

    @Test func changedEntityStartsOverWithoutIfRange() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(40)
        _ = machine.transferFailed(HaulError(.network, "reset"), jitter: 0)
        _ = machine.retryTimerFired()
        let action = machine.responseReceived(head(206, ["Content-Range": "bytes 40-99/100", "ETag": "\"b\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(action == .retry(after: .zero))
        #expect(machine.record.completedLength == 0)
        #expect(machine.record.validator == nil)
        #expect(machine.retryTimerFired() == .request(RequestPlan(url: url, range: nil, ifRange: nil, headers: [:])))
    }

    @Test func alreadyCompleteGoesStraightToVerify() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "100"]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(100)
        _ = machine.transferFailed(HaulError(.network, "reset just before the end"), jitter: 0)
        // The record says all 100 bytes are there: a new run verifies without a request.
        var rerun = DownloadStateMachine(record: machine.record, policy: machine.policy)
        #expect(rerun.start() == .verify)
    }

    @Test func fourSixteenAtTheLocalLengthCompletes() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, [:]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(100)
        _ = machine.transferFailed(HaulError(.network, "reset"), jitter: 0)
        #expect(machine.retryTimerFired() == .request(RequestPlan(url: url, range: ByteRange(start: 100), ifRange: nil, headers: [:])))
        #expect(machine.responseReceived(head(416, ["Content-Range": "bytes */100"]), nowSecondsSince1970: 0, jitter: 0) == .verify)
        #expect(machine.record.expectedLength == 100)
    }

    @Test func chunkedBodyLearnsItsLengthAtTheEnd() throws {
        var machine = try machine()
        _ = machine.start()
        #expect(machine.responseReceived(head(200, ["Transfer-Encoding": "chunked"]), nowSecondsSince1970: 0, jitter: 0)
                == .receive(BodyPlan(fileOffset: 0)))
        machine.bytesWritten(1234)
        #expect(machine.bodyEnded(jitter: 0) == .verify)
        #expect(machine.record.totalLength == 1234)
    }

    @Test func shortBodyIsNeverSuccess() throws {
        var machine = try machine(maxAttempts: 1)
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "100"]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(60)
        // The body "ended" at 60 of 100: ask for the rest rather than verify.
        #expect(machine.bodyEnded(jitter: 0) == .request(RequestPlan(url: url, range: ByteRange(start: 60, end: 99), ifRange: nil, headers: [:])))
        // And a rest that brings nothing fails instead of completing.
        _ = machine.responseReceived(head(206, ["Content-Range": "bytes 60-99/100"]), nowSecondsSince1970: 0, jitter: 0)
        guard case .fail(let error) = machine.bodyEnded(jitter: 0) else { Issue.record("short body passed"); return }
        #expect(error.code == .lengthMismatch)
    }

    @Test func partialRangeIsClampedToTheFile() throws {
        var machine = try machine(range: ByteRange(start: 10, end: 500))
        #expect(machine.start() == .request(RequestPlan(url: url, range: ByteRange(start: 10, end: 500), ifRange: nil, headers: [:])))
        let action = machine.responseReceived(head(206, ["Content-Range": "bytes 10-99/100"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(action == .receive(BodyPlan(fileOffset: 0, limit: 90)))
        #expect(machine.record.expectedLength == 90)
    }

    @Test func verificationFailureForgetsTheBytes() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "10"]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(10)
        _ = machine.bodyEnded(jitter: 0)
        let error = HaulError(.checksumMismatch, "bad")
        #expect(machine.verified(error) == .fail(error))
        #expect(machine.record.completedLength == 0)
    }

    @Test func stopKeepsTheRequestedStatus() throws {
        var machine = try machine()
        _ = machine.start()
        #expect(machine.stopRequested(status: .paused) == .stop)
        #expect(machine.record.status == .paused)
        #expect(machine.state == .stopped)
    }

    @Test func diskFailureKeepsOnlyDurableBytes() throws {
        var machine = try machine()
        _ = machine.start()
        _ = machine.responseReceived(head(200, ["Content-Length": "100"]), nowSecondsSince1970: 0, jitter: 0)
        machine.bytesWritten(80)
        let error = HaulError(.diskFull, "full")
        #expect(machine.diskFailed(error, durableLength: 30) == .fail(error))
        #expect(machine.record.completedLength == 30)
    }
}
