import HaulCore
import Testing

/// `-N` and `--remote-time` in the machine, with plain values: a fresh start with a local file
/// asks `If-Modified-Since`, a 304 ends the run complete without a byte, a newer file is
/// downloaded, replaces the old one only once verified, and gets the server's time.
@Suite(.timeLimit(.minutes(1))) struct TimestampingTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    /// 2026-11-01 12:00:00 UTC.
    let localTime: Int64 = 1_793_534_400

    func machine(timestamping: Bool = true, remoteTime: Bool = false) throws -> Machine {
        var request = try DownloadRequest(url: url, destination: .file("/tmp/file"))
        request.timestamping = timestamping
        request.remoteTime = remoteTime
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1, overlap: 50, maxConnectionBackoff: .seconds(60), tickInterval: 0.25,
                piecesPerConnection: 0, httpVersions: .http1_1))
    }

    func plan(_ actions: [Machine.Action]) -> RequestPlan? {
        for action in actions { if case .request(_, let plan) = action { return plan } }
        return nil
    }

    @Test func httpDates() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(localTime) == "Sun, 01 Nov 2026 12:00:00 GMT")
        for seconds: Int64 in [0, 784_111_777, localTime, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test func aFreshStartWithALocalFileAsksModifiedSince() throws {
        var machine = try machine()
        let local = Machine.LocalFiles(partSize: nil, published: false, finalModified: localTime)
        let first = try #require(plan(machine.start(local, now: 0)))
        #expect(first.ifModifiedSince == "Sun, 01 Nov 2026 12:00:00 GMT")
        #expect(first.allHeaders["If-Modified-Since"] == "Sun, 01 Nov 2026 12:00:00 GMT")
        // Without -N, or without a local file, nothing is asked.
        var plain = try self.machine(timestamping: false)
        #expect(try #require(plan(plain.start(local, now: 0))).ifModifiedSince == nil)
        var none = try self.machine()
        #expect(try #require(plan(none.start(.init(partSize: nil, published: false), now: 0))).ifModifiedSince == nil)
    }

    @Test func a304EndsTheRunCompleteWithoutAByte() throws {
        var machine = try machine()
        _ = machine.start(.init(partSize: nil, published: false, finalModified: localTime), now: 0)
        let actions = machine.responseReceived(
            0, ResponseHead(status: 304, headers: [:], url: "http://h/file"),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(actions == [.close(0), .notify(.notModified), .persist, .finish(.notModified)])
        #expect(machine.record.status == .completed)
        #expect(machine.completedLength == 0)
        // A 304 nobody asked for is no success.
        let check = ResponseCheck.evaluate(
            ResponseHead(status: 304, headers: [:], url: "http://h/file"),
            asked: RequestPlan(url: url, range: nil, ifRange: nil, headers: [:]), next: 0,
            partEnd: nil, resuming: false, requested: nil, validator: nil, total: nil,
            nowSecondsSince1970: 0)
        guard case .fail = check else {
            Issue.record("\(check)")
            return
        }
    }

    @Test func aNewerFileReplacesTheOldOneOnceVerifiedAndGetsTheServersTime() throws {
        var machine = try machine()
        _ = machine.start(.init(partSize: nil, published: false, finalModified: localTime), now: 0)
        let newer = "Mon, 02 Nov 2026 08:00:00 GMT"
        _ = machine.responseReceived(
            0,
            ResponseHead(
                status: 200, headers: ["Content-Length": "100", "Last-Modified": newer],
                url: "http://h/file"), nowSecondsSince1970: 0, jitter: 0)
        for _ in 0..<10 { _ = machine.received(0, count: 10) }
        #expect(machine.bodyEnded(0, jitter: 0).contains(.verify(.part)))
        #expect(machine.verified(nil) == [.replaceFinal], "replaced only now, complete and verified")
        #expect(
            machine.published(nil) == [.persist, .setModificationTime(HTTPDate.parse(newer)!), .finish(.completed)])
        #expect(machine.record.status == .completed)
    }

    @Test func remoteTimeAloneKeepsTheUsualPublish() throws {
        var machine = try machine(timestamping: false, remoteTime: true)
        let first = try #require(
            plan(machine.start(.init(partSize: nil, published: false, finalModified: localTime), now: 0)))
        #expect(first.ifModifiedSince == nil)
        let modified = "Tue, 03 Nov 2026 08:00:00 GMT"
        _ = machine.responseReceived(
            0,
            ResponseHead(
                status: 200, headers: ["Content-Length": "10", "Last-Modified": modified],
                url: "http://h/file"), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 10)
        _ = machine.bodyEnded(0, jitter: 0)
        #expect(machine.verified(nil) == [.publish(.part)])
        #expect(
            machine.published(nil) == [.persist, .setModificationTime(HTTPDate.parse(modified)!), .finish(.completed)])
    }
}
