import HaulCore
import Testing

/// Which HTTP version each request may use is the machine's choice, made once per download, and
/// what a run cost on the wire is counted from what the transport tells.
@Suite(.timeLimit(.minutes(1))) struct HTTPVersionTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("https://h/file")

    func machine(connections: Int, _ policy: HTTPVersionPolicy) throws -> Machine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(record: record, settings: .init(minimumSegment: 100, minimumSteal: 10, httpVersions: policy))
    }

    func plans(_ actions: [Machine.Action]) -> [RequestPlan] {
        actions.compactMap { if case .request(_, let plan) = $0 { plan } else { nil } }
    }

    func partial(_ start: Int64, _ end: Int64, of total: Int64) -> ResponseHead {
        ResponseHead(status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/\(total)", "ETag": "\"a\""], url: url.absoluteString)
    }

    @Test func thePolicyByRequestLength() {
        let small = HTTPVersionPolicy.smallRequest
        #expect(HTTPVersionPolicy.automatic.allowsHTTP2(requestLength: small))
        #expect(!HTTPVersionPolicy.automatic.allowsHTTP2(requestLength: small + 1))
        #expect(!HTTPVersionPolicy.automatic.allowsHTTP2(requestLength: nil))
        #expect(!HTTPVersionPolicy.http1_1.allowsHTTP2(requestLength: 1))
        #expect(HTTPVersionPolicy.http2.allowsHTTP2(requestLength: nil))
        #expect(HTTPVersionPolicy.automatic.boundsFirstRequest(scheme: "https"))
        #expect(!HTTPVersionPolicy.automatic.boundsFirstRequest(scheme: "http"))
        #expect(!HTTPVersionPolicy.http2.boundsFirstRequest(scheme: "https"))
    }

    /// One connection over https: a first piece may go over HTTP/2 (a small file is whole in
    /// it), the rest of a large file goes over HTTP/1.1, through a retry too.
    @Test func oneConnectionTakesAFirstPieceOverHTTP2AndTheRestOverHTTP1() throws {
        var machine = try machine(connections: 1, .automatic)
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && first[0].allowsHTTP2 && first[0].range == ByteRange(start: 0, end: 99), "\(first)")
        _ = machine.responseReceived(0, partial(0, 99, of: 10 << 20), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 100)
        let rest = plans(machine.bodyEnded(0, jitter: 0))
        #expect(rest.count == 1 && !rest[0].allowsHTTP2 && rest[0].range == ByteRange(start: 100, end: (10 << 20) - 1), "\(rest)")
        _ = machine.responseReceived(0, partial(100, (10 << 20) - 1, of: 10 << 20), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 400)
        _ = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
        let retry = plans(machine.timerFired(.retry(0)))
        #expect(retry.count == 1 && retry.first?.allowsHTTP2 == false)
        #expect(retry.first?.range == ByteRange(start: 500, end: (10 << 20) - 1))
        #expect(retry.first?.ifRange == "\"a\"")
    }

    /// A server that ignores the first piece's range sends the whole file, which is taken.
    @Test func aWholeAnswerToTheFirstPieceIsTheFile() throws {
        var machine = try machine(connections: 1, .automatic)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        let actions = machine.responseReceived(0, ResponseHead(status: 200, headers: ["Content-Length": "1000"], url: url.absoluteString),
                                               nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.contains { if case .receive(0) = $0 { true } else { false } }, "\(actions)")
        #expect(machine.received(0, count: 1000).keep == 1000)
        #expect(plans(machine.bodyEnded(0, jitter: 0)).isEmpty)
        #expect(machine.record.totalLength == 1000)
    }

    /// An empty file answered with 416 `*/0` to the first piece is complete, not an error.
    @Test func anEmptyFileAnsweredWith416IsComplete() throws {
        var machine = try machine(connections: 1, .automatic)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        let actions = machine.responseReceived(0, ResponseHead(status: 416, headers: ["Content-Range": "bytes */0"], url: url.absoluteString),
                                               nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.totalLength == 0)
        #expect(machine.state == .verifying(.part, stop: nil), "\(actions)")
    }

    /// Over plain http, and under `--http1.1` or `--http2`, one connection asks for the whole file.
    @Test(arguments: [("http://h/file", HTTPVersionPolicy.automatic), ("https://h/file", .http1_1), ("https://h/file", .http2)])
    func oneConnectionAsksForTheWholeFileOtherwise(url: String, policy: HTTPVersionPolicy) throws {
        let request = try DownloadRequest(url: RemoteURL(url), destination: .directory("/tmp"))
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var machine = Machine(record: record, settings: .init(minimumSegment: 100, minimumSteal: 10, httpVersions: policy))
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && first[0].range == nil && first[0].allowsHTTP2 == (policy == .http2), "\(first)")
    }

    /// Several connections of a large file: the first piece may share an HTTP/2 connection, the
    /// large pieces go over HTTP/1.1 on TCP connections of their own, unless `--http2` asks for
    /// HTTP/2 everywhere; `--http1.1` holds even a single connection to it.
    @Test(arguments: [(4, HTTPVersionPolicy.automatic, true, false), (4, .http2, true, true), (1, .http1_1, false, false),
                      (2, .http1_1, false, false)])
    func theFirstPieceAndTheLargeOnes(connections: Int, policy: HTTPVersionPolicy, first: Bool, extra: Bool) throws {
        var machine = try machine(connections: connections, policy)
        let opening = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        var extras: [RequestPlan] = []
        if connections > 1 {
            // The first range answered opens the others.
            extras = plans(machine.responseReceived(0, partial(0, 99, of: 1 << 30), nowSecondsSince1970: 0, jitter: 0))
        }
        #expect(opening.count == 1 && extras.count == connections - 1, "\(opening) \(extras)")
        #expect(opening.allSatisfy { $0.allowsHTTP2 == first }, "\(opening)")
        #expect(extras.allSatisfy { $0.allowsHTTP2 == extra }, "\(extras)")
    }

    /// The pieces of a small file are small requests: they may all share the HTTP/2 connection.
    @Test func aSmallFilesPiecesMayAllUseHTTP2() throws {
        var machine = try machine(connections: 4, .automatic)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        let extras = plans(machine.responseReceived(0, partial(0, 99, of: 10_000), nowSecondsSince1970: 0, jitter: 0))
        #expect(extras.count == 3 && extras.allSatisfy(\.allowsHTTP2), "\(extras)")
    }

    @Test func transferStatsCountRedirectsAndDistinctConnections() {
        var stats = TransferStats()
        stats.requestSent()
        // A redirect followed by the transport on another connection, both opened for it.
        stats.answered(over: [ConnectionUse(connection: 4, isFirst: true, tls: true, httpVersion: "HTTP/1.1"),
                              ConnectionUse(connection: 5, isFirst: true, tls: true, httpVersion: "HTTP/2")])
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
