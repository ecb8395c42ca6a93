import HaulCore
import Testing

/// Which HTTP version each request may use is the machine's choice, made once per download, and
/// what a run cost on the wire is counted from what the transport tells.
@Suite(.timeLimit(.minutes(1))) struct HTTPVersionTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("https://h/file")

    func machine(connections: Int, _ policy: HTTPVersionPolicy, sentPastTheLimit: Bool = false) throws -> Machine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var settings = Machine.Settings(minimumSegment: 100, minimumSteal: 10, httpVersions: policy)
        settings.smallOverHTTP2 = sentPastTheLimit
        return Machine(record: record, settings: settings)
    }

    /// A whole answer of 10 MiB to connection 0's request, 500 bytes of it, then a reset: the
    /// file is known to be large and the connection retries.
    func resetAfterFiveHundredBytesOfAWholeAnswer(_ machine: inout Machine) {
        _ = machine.responseReceived(
            0,
            ResponseHead(
                status: 200, headers: ["Content-Length": "\(10 << 20)", "ETag": "\"a\""],
                url: url.absoluteString), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 500)
        _ = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
    }

    func plans(_ actions: [Machine.Action]) -> [RequestPlan] {
        actions.compactMap { if case .request(_, let plan) = $0 { plan } else { nil } }
    }

    func partial(_ start: Int64, _ end: Int64, of total: Int64) -> ResponseHead {
        ResponseHead(
            status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/\(total)", "ETag": "\"a\""],
            url: url.absoluteString)
    }

    @Test func onlyHTTP2AllowsHTTP2() {
        #expect(!HTTPVersionPolicy.automatic.allowsHTTP2)
        #expect(!HTTPVersionPolicy.http1_1.allowsHTTP2)
        #expect(HTTPVersionPolicy.http2.allowsHTTP2)
    }

    /// One connection over https by default: one request for the whole file over HTTP/1.1 (no
    /// first piece that would need a second connection for the rest), and a retry resumes on it.
    @Test func oneConnectionAsksForTheWholeFileOverHTTP1() throws {
        var machine = try machine(connections: 1, .automatic)
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && !first[0].allowsHTTP2 && first[0].range == nil, "\(first)")
        resetAfterFiveHundredBytesOfAWholeAnswer(&machine)
        let retry = plans(machine.timerFired(.retry(0)))
        #expect(retry.count == 1 && retry.first?.allowsHTTP2 == false)
        #expect(retry.first?.range == ByteRange(start: 500, end: (10 << 20) - 1))
        #expect(retry.first?.ifRange == "\"a\"")
    }

    /// A run sent past `-j` may ask over HTTP/2 while its file is not known to be large; once it
    /// is, its retry goes over HTTP/1.1 as any download's. `--http1.1` keeps it on HTTP/1.1.
    @Test func aRunSentPastTheLimitAsksOverHTTP2UntilTheFileIsLarge() throws {
        var machine = try machine(connections: 1, .automatic, sentPastTheLimit: true)
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && first[0].allowsHTTP2)
        resetAfterFiveHundredBytesOfAWholeAnswer(&machine)
        #expect(plans(machine.timerFired(.retry(0))).first?.allowsHTTP2 == false)
        var pinned = try self.machine(connections: 1, .http1_1, sentPastTheLimit: true)
        #expect(plans(pinned.start(.init(partSize: nil, published: false), now: 0)).first?.allowsHTTP2 == false)
    }

    /// A whole answer to a whole-file request ends the download with its body.
    @Test func aWholeAnswerIsTheFile() throws {
        var machine = try machine(connections: 1, .automatic)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        let actions = machine.responseReceived(
            0, ResponseHead(status: 200, headers: ["Content-Length": "1000"], url: url.absoluteString),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.contains { if case .receive(0) = $0 { true } else { false } }, "\(actions)")
        #expect(machine.received(0, count: 1000).keep == 1000)
        #expect(plans(machine.bodyEnded(0, jitter: 0)).isEmpty)
        #expect(machine.record.totalLength == 1000)
    }

    /// An empty file answered with 416 `*/0` to a first range request (several connections) is
    /// complete, not an error.
    @Test func anEmptyFileAnsweredWith416IsComplete() throws {
        var machine = try machine(connections: 2, .automatic)
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.first?.range?.start == 0, "\(first)")
        let actions = machine.responseReceived(
            0, ResponseHead(status: 416, headers: ["Content-Range": "bytes */0"], url: url.absoluteString),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.totalLength == 0)
        #expect(machine.state == .verifying(.part, stop: nil), "\(actions)")
    }

    /// Over plain http, and under `--http1.1` or `--http2`, one connection asks for the whole file too.
    @Test(arguments: [
        ("http://h/file", HTTPVersionPolicy.automatic), ("https://h/file", .http1_1), ("https://h/file", .http2),
    ])
    func oneConnectionAsksForTheWholeFileUnderEveryPolicy(url: String, policy: HTTPVersionPolicy) throws {
        let request = try DownloadRequest(url: RemoteURL(url), destination: .directory("/tmp"))
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var machine = Machine(
            record: record, settings: .init(minimumSegment: 100, minimumSteal: 10, httpVersions: policy))
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && first[0].range == nil && first[0].allowsHTTP2 == (policy == .http2), "\(first)")
    }

    /// Several connections: every request, the first one's and the ranges', goes over HTTP/1.1
    /// (each on a TCP connection of its own) unless `--http2` asks for HTTP/2, whatever the size
    /// of the file: a small file's pieces do not collapse into streams of one connection either.
    @Test(arguments: [
        (4, HTTPVersionPolicy.automatic, Int64(1) << 30), (4, .automatic, 10_000), (4, .http2, 1 << 30),
        (1, .http1_1, 1 << 30), (2, .http1_1, 1 << 30),
    ])
    func everyRequestOfADownloadUsesOneVersion(connections: Int, policy: HTTPVersionPolicy, total: Int64) throws {
        var machine = try machine(connections: connections, policy)
        let opening = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        var extras: [RequestPlan] = []
        if connections > 1 {
            // The first range answered opens the others.
            extras = plans(machine.responseReceived(0, partial(0, 99, of: total), nowSecondsSince1970: 0, jitter: 0))
        }
        #expect(opening.count == 1 && extras.count == connections - 1, "\(opening) \(extras)")
        #expect((opening + extras).allSatisfy { $0.allowsHTTP2 == (policy == .http2) }, "\(opening) \(extras)")
    }

    @Test func transferStatsCountRedirectsAndDistinctConnections() {
        var stats = TransferStats()
        stats.requestSent()
        // A redirect followed by the transport on another connection, both opened for it.
        stats.answered(over: [
            ConnectionUse(connection: 4, isFirst: true, tls: true, httpVersion: "HTTP/1.1"),
            ConnectionUse(connection: 5, isFirst: true, tls: true, httpVersion: "HTTP/2"),
        ])
        stats.requestSent()
        stats.answered(over: [ConnectionUse(connection: 5, isFirst: false, tls: true, httpVersion: "HTTP/2")])
        stats.requestSent()
        // A request that failed before any answer: sent, over no known connection.
        #expect(stats.requests == 4)
        #expect(stats.connectionsUsed == 2)
        #expect(stats.connectionsOpened == 2)
        #expect(stats.tlsHandshakes == 2)
        #expect(stats.httpVersions == ["HTTP/1.1", "HTTP/2"])
        #expect(stats.usedTLS)
    }
}
