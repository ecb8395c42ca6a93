import HaulCore
import Testing

/// Issue 19, items 10 to 12 in the machine: what a retry counts (progress is kept bytes beyond
/// any kept before), broken framing, the server's long `Retry-After`, and the low-speed rule.
@Suite(.timeLimit(.minutes(2))) struct RetryProgressTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)

    func machine(maxAttempts: Int = 3, connections: Int = 1, retry: RetryPolicy? = nil) throws -> Machine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: retry
                    ?? RetryPolicy(
                        maxAttempts: maxAttempts, baseDelay: .seconds(1), speedLimit: 100, speedTime: .seconds(2)),
                minimumSegment: 100, minimumSteal: 10, checkpointInterval: 1000, overlap: 50, tickInterval: 0.25,
                piecesPerConnection: 0))
    }

    func head(_ status: Int, _ headers: HTTPHeaderList) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://h/file")
    }

    func feed(_ machine: inout Machine, _ connection: Int, _ count: Int) {
        var left = count
        while left > 0 {
            let answer = machine.received(connection, count: min(10, left))
            left -= 10
            if answer.partComplete { break }
        }
    }

    func attempts(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .notify(.retrying(let attempt, _, _)) = $0 { attempt } else { nil } }
    }

    /// The endless loop: a server that answers every try with the whole file (200) and breaks
    /// after 100 bytes. Each try wrote 100 bytes, and each reset the count; the bytes of every
    /// try after the first replace the ones thrown away, so they are no progress.
    @Test func bytesThrownAwayByAStartOverAreNoProgress() throws {
        var machine = try machine(maxAttempts: 3)
        _ = machine.start(noFiles, now: 0)
        var seen: [Int] = []
        for _ in 1...10 {
            _ = machine.responseReceived(
                0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
            feed(&machine, 0, 100)
            let actions = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
            seen += attempts(actions)
            if machine.state == .failed { break }
            _ = machine.timerFired(.retry(0))
        }
        #expect(seen == [1, 2], "the first try kept new bytes; the next two only replaced them")
        #expect(machine.state == .failed)
        #expect(machine.record.error?.message == "reset")
    }

    /// Bytes past the furthest ever kept are progress again, however the try began.
    @Test func bytesBeyondTheThrownAwayOnesAreProgress() throws {
        var machine = try machine(maxAttempts: 3)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 100)
        #expect(attempts(machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)) == [1])
        _ = machine.timerFired(.retry(0))
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 80)
        #expect(attempts(machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)) == [2])
        _ = machine.timerFired(.retry(0))
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 150)
        #expect(
            attempts(machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)) == [1],
            "50 bytes past the old 100")
    }

    /// A body whose framing breaks after new bytes keeps them (they are right for their
    /// offsets), but the try still counts: the count grows to the limit.
    @Test func brokenFramingCountsEvenAfterNewBytes() throws {
        var machine = try machine(maxAttempts: 3)
        _ = machine.start(noFiles, now: 0)
        var seen: [Int] = []
        var offset: Int64 = 0
        for _ in 1...10 {
            let head =
                offset == 0
                ? head(200, ["Content-Length": "1000", "ETag": "\"a\""])
                : head(206, ["Content-Range": "bytes \(offset)-999/1000", "ETag": "\"a\""])
            #expect(machine.responseReceived(0, head, nowSecondsSince1970: 0, jitter: 0).contains(.receive(0)))
            feed(&machine, 0, 10)
            offset += 10
            let broken = HaulError(.brokenFraming, "the server broke chunked encoding")
            seen += attempts(machine.transferFailed(0, broken, jitter: 0))
            if machine.state == .failed { break }
            _ = machine.timerFired(.retry(0))
        }
        #expect(seen == [1, 2])
        #expect(machine.completedLength == 30, "the bytes before each break are kept")
        #expect(machine.record.error?.code == .brokenFraming)
    }

    /// A short body of bytes already had (after a start-over) is a failed try, not a reason to
    /// ask again at once with a fresh count.
    @Test func aShortBodyOfOldBytesIsAFailure() throws {
        var machine = try machine(maxAttempts: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 100)
        _ = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
        _ = machine.timerFired(.retry(0))
        // A 200 to the resume's If-Range, same ETag: asked once more without it, then the 200 is taken.
        let again = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(
            again.contains { if case .request(0, let plan) = $0 { plan.ifRange == nil } else { false } }, "\(again)")
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 50)
        _ = machine.bodyEnded(0, jitter: 0)
        #expect(machine.state == .failed)
        #expect(machine.record.error?.code == .lengthMismatch)
    }

    // MARK: Retry-After

    @Test func aRetryAfterLongerThanTheLimitFailsAtOnceNamingTheTime() throws {
        var machine = try machine(
            retry: RetryPolicy(maxAttempts: 5, maxRetryAfter: .seconds(60), waitsForLongRetryAfter: false))
        _ = machine.start(noFiles, now: 0)
        let now: Int64 = 1_764_052_189 // 2025-11-25T06:29:49Z
        let actions = machine.responseReceived(
            0, head(503, ["Retry-After": "999999"]), nowSecondsSince1970: now, jitter: 0)
        #expect(actions.suffix(2) == [.persist, .finish(.failed(try #require(machine.record.error)))])
        #expect(machine.state == .failed)
        #expect(
            machine.record.error?.message
                == """
                http://h/file: HTTP 503: the server asks to be tried again in 999999 s (at 2025-12-06T20:16:28Z), \
                longer than the 60 s haul waits
                """
        )
        #expect(machine.record.error?.httpStatus == 503)
    }

    @Test func aRetryAfterWithinTheLimitIsWaitedFor() throws {
        var machine = try machine(
            retry: RetryPolicy(maxAttempts: 5, maxRetryAfter: .seconds(60), waitsForLongRetryAfter: false))
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(0, head(503, ["Retry-After": "60"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.last == .schedule(.retry(0), after: .seconds(60)))
    }

    /// The daemon waits as long as the server asks, and its record says until when.
    @Test func theDaemonWaitsVisibly() throws {
        var machine = try machine(
            retry: RetryPolicy(maxAttempts: 5, maxRetryAfter: .seconds(60), waitsForLongRetryAfter: true))
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(
            0, head(503, ["Retry-After": "999999"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.first == .persist)
        #expect(actions.last == .schedule(.retry(0), after: .seconds(999_999)))
        #expect(machine.state == .downloading && machine.record.status == .running)
        #expect(
            machine.record.error?.message
                == """
                http://h/file: HTTP 503: waiting: the server asks to be tried again in 999999 s (at \
                1970-01-12T13:46:39Z)
                """
        )
        let retry = machine.timerFired(.retry(0))
        #expect(retry.first == .persist && machine.record.error == nil, "the wait is over: the record says so")
    }

    @Test func timesInMessages() {
        #expect(HTTPDate.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(HTTPDate.iso8601(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")!) == "1994-11-06T08:49:37Z")
        #expect(HTTPDate.iso8601(HTTPDate.parse("Tue, 29 Feb 2028 23:59:59 GMT")!) == "2028-02-29T23:59:59Z")
    }

    // MARK: The low-speed rule (100 bytes/s for 2 s in these machines)

    /// A drip: one connection under the limit for the whole window ends as a failed try, and
    /// its trickle of new bytes does not excuse it, so drips run out of tries.
    @Test func aDripEndsAsAFailedTryAndRunsOutOfTries() throws {
        var machine = try machine(maxAttempts: 2)
        _ = machine.start(noFiles, now: 0)
        var now = 0.0
        var closes = 0
        var seen: [Int] = []
        for _ in 1...5 {
            let answered = machine.responseReceived(
                0, head(200, ["Content-Length": "100000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
            if answered.contains(where: { if case .request = $0 { true } else { false } }) {
                // A 200 to a resume with If-Range, same ETag: asked once more without it (`+Validators`).
                _ = machine.responseReceived(
                    0, head(200, ["Content-Length": "100000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
            }
            var closed = false
            for _ in 1...40 where !closed {
                now += 0.25
                feed(&machine, 0, 10) // 40 bytes/s
                closed = machine.tick(now: now, elapsed: 0.25).contains(.close(0))
            }
            #expect(closed, "a connection at 40 bytes/s is closed within the window")
            closes += 1
            let report = machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
            seen += attempts(report)
            if machine.state == .failed { break }
            #expect(report.last == .schedule(.retry(0), after: .milliseconds(750)))
            _ = machine.timerFired(.retry(0))
        }
        #expect(seen == [1])
        #expect(closes == 2)
        #expect(machine.record.error?.message.hasPrefix("http://h/file: too slow: ") == true)
        #expect(machine.record.error?.message.hasSuffix("bytes/s, under the 100 bytes/s allowed, for 2 s") == true)
    }

    /// A connection that keeps up, even in bursts, is never closed.
    @Test func aConnectionAtTheLimitStays() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "100000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        var now = 0.0
        for step in 1...80 {
            now += 0.25
            if step % 4 == 0 { feed(&machine, 0, 110) } // one burst a second
            #expect(!machine.tick(now: now, elapsed: 0.25).contains(.close(0)))
        }
    }

    /// With several connections, a slow one gives its part back at once to a new connection that
    /// starts where it stopped.
    @Test func aSlowConnectionAmongSeveralIsReplaced() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        let total: Int64 = 100_000
        let opened = machine.responseReceived(
            0, head(206, ["Content-Range": "bytes 0-\(total - 1)/\(total)", "ETag": "\"a\""]),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(opened.contains { if case .request(1, _) = $0 { true } else { false } })
        _ = machine.responseReceived(
            1, head(206, ["Content-Range": "bytes 50000-99999/100000", "ETag": "\"a\""]),
            nowSecondsSince1970: 0, jitter: 0)
        var now = 0.0
        var replaced: [Machine.Action] = []
        var slowBytes: Int64 = 0
        for _ in 1...40 where replaced.isEmpty {
            now += 0.25
            feed(&machine, 0, 1000)
            feed(&machine, 1, 10)
            slowBytes += 10
            replaced = machine.tick(now: now, elapsed: 0.25).filter { $0 != .backgroundCheckpoint(epoch: 0) }
        }
        let plans = replaced.compactMap { if case .request(let id, let plan) = $0 { (id, plan) } else { nil } }
        #expect(replaced.contains(.close(1)))
        #expect(plans.count == 1 && plans.first?.0 == 2)
        #expect(plans.first?.1.range == ByteRange(start: 50_000 + slowBytes, end: 99_999), "its bytes are kept")
        #expect(machine.owners[50_000] == 2)
        #expect(machine.record.status == .running)
    }
}
