import HaulCore
import Testing

/// Issue 45, part 8: a server that answers some range requests with the whole file (200), the
/// entity unchanged (every second one, say). While other connections bring bytes such an answer
/// uses none of the download's tries: the connection asks again. With no byte in between, it is
/// a failure like any other, so a server that ignores every range request still runs out of tries.
@Suite(.timeLimit(.minutes(2))) struct RangeIgnoredTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)
    let total: Int64 = 4000

    /// Two connections, pieces of 250 bytes (4000 / (2 x 8)) after a first one of 100; 3 tries.
    func machine() throws -> Machine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: 2)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 8,
                httpVersions: .http1_1))
    }

    /// The whole file, as the server has it: the same ETag and length.
    var whole: ResponseHead {
        ResponseHead(status: 200, headers: ["Content-Length": "\(total)", "ETag": "\"a\""], url: "http://h/file")
    }

    func partial(_ plan: RequestPlan?) throws -> ResponseHead {
        let range = try #require(plan?.range)
        return ResponseHead(
            status: 206,
            headers: ["Content-Range": "bytes \(range.start)-\(range.end ?? total - 1)/\(total)", "ETag": "\"a\""],
            url: "http://h/file")
    }

    func requests(_ actions: [Machine.Action]) -> [Int: RequestPlan] {
        var plans: [Int: RequestPlan] = [:]
        for action in actions { if case .request(let id, let plan) = action { plans[id] = plan } }
        return plans
    }

    func attempts(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .notify(.retrying(let attempt, _, _)) = $0 { attempt } else { nil } }
    }

    /// Answers `plan` on `id` with a 206 and its whole body; the actions of the body's end.
    func serve(_ machine: inout Machine, _ id: Int, _ plan: RequestPlan?) throws -> [Machine.Action] {
        let range = try #require(plan?.range)
        let head = machine.responseReceived(id, try partial(plan), nowSecondsSince1970: 0, jitter: 0)
        #expect(head.contains(.receive(id)), "\(head)")
        var left = (range.end ?? total - 1) - range.start + 1
        while left > 0 {
            let accepted = machine.received(id, count: Int(min(left, 50)))
            left -= min(left, 50)
            if accepted.partComplete { break }
        }
        return head + machine.bodyEnded(id, jitter: 0)
    }

    /// Connection 1's answer was a retry: the request it sends next (at once after a distrusted
    /// If-Range, else when its timer fires).
    func nextTry(_ machine: inout Machine, after answer: [Machine.Action]) throws -> RequestPlan {
        if let again = requests(answer)[1] { return again }
        #expect(answer.contains { if case .schedule(.retry(1), _) = $0 { true } else { false } }, "\(answer)")
        return try #require(requests(machine.timerFired(.retry(1)))[1])
    }

    /// The fault of the issue: connection 1 gets the whole file five times in a row while
    /// connection 0 brings a piece between each two. Before the fix the third counted answer
    /// failed the download (connection 0 was asking for its next piece, not receiving).
    @Test func wholeAnswersWhileAnotherConnectionBringsBytesUseNoTry() throws {
        var machine = try machine()
        var zero = requests(machine.start(noFiles, now: 0))[0]
        let opened = try serve(&machine, 0, zero)
        zero = requests(opened)[0]
        var one = try #require(requests(opened)[1])
        #expect(one.range == ByteRange(start: 2000, end: 2249))
        var seen: [Int] = []
        for answer in 1...5 {
            let actions = machine.responseReceived(1, whole, nowSecondsSince1970: 0, jitter: 0)
            #expect(machine.state == .downloading, "answer \(answer): \(actions)")
            #expect(!actions.contains(.close(1)), "answer \(answer): connection 1 kept: \(actions)")
            seen += attempts(actions)
            // Connection 0 brings its next piece meanwhile.
            zero = requests(try serve(&machine, 0, zero))[0]
            #expect(zero != nil)
            one = try nextTry(&machine, after: actions)
            #expect(one.range?.start == 2000)
        }
        // The first answer only lowered the trust in If-Range; each later one is a retry, none
        // counted: the retry number never climbs.
        #expect(seen == [1, 1, 1, 1], "\(seen)")
        // Then the server answers as asked, and the download completes.
        var outstanding: [Int: RequestPlan?] = [0: zero, 1: one]
        var verified = false
        for _ in 0..<100 where !verified {
            guard let id = outstanding.keys.sorted().first, let plan = outstanding.removeValue(forKey: id) else {
                break
            }
            var actions = try serve(&machine, id, plan)
            // Connections told to close once every byte is in report that they have.
            for case .close(let closed) in actions where outstanding.removeValue(forKey: closed) != nil {
                actions += machine.connectionClosed(closed)
            }
            verified = actions.contains(.verify(.part))
            for (next, plan) in requests(actions) { outstanding[next] = plan }
        }
        #expect(verified)
        #expect(machine.completedLength == total)
    }

    /// With no byte in between, each whole answer uses a try: the tries run out, and with no other
    /// connection receiving the download fails, naming the fault.
    @Test func wholeAnswersWithNoBytesBetweenUseTheTries() throws {
        var machine = try machine()
        let zero = requests(machine.start(noFiles, now: 0))[0]
        let opened = try serve(&machine, 0, zero)
        // Connection 0's next piece is asked for, and never answered.
        #expect(requests(opened)[0] != nil)
        _ = try #require(requests(opened)[1])
        var seen: [Int] = []
        for _ in 1...6 {
            let actions = machine.responseReceived(1, whole, nowSecondsSince1970: 0, jitter: 0)
            seen += attempts(actions)
            if machine.state == .failed { break }
            _ = try nextTry(&machine, after: actions)
        }
        #expect(machine.state == .failed)
        #expect(machine.record.error?.message == "http://h/file: the server ignored a range request")
        // The first answer lowered the trust in If-Range; the second came after connection 0's
        // first piece (no try used); the next three had nothing between them.
        #expect(seen == [1, 1, 2], "\(seen)")
    }
}
