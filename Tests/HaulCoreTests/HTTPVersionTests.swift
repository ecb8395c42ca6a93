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

    @Test func thePolicyByConnection() {
        #expect(HTTPVersionPolicy.automatic.allowsHTTP2(extraConnection: false))
        #expect(!HTTPVersionPolicy.automatic.allowsHTTP2(extraConnection: true))
        #expect(!HTTPVersionPolicy.http1_1.allowsHTTP2(extraConnection: false))
        #expect(HTTPVersionPolicy.http2.allowsHTTP2(extraConnection: true))
    }

    /// One connection: HTTP/2 may be used, for the first request and for the resume after a drop.
    @Test func oneConnectionMayUseHTTP2ThroughARetry() throws {
        var machine = try machine(connections: 1, .automatic)
        let first = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        #expect(first.count == 1 && first[0].allowsHTTP2 && first[0].range == nil)
        _ = machine.responseReceived(0, ResponseHead(status: 200, headers: ["Content-Length": "1000", "ETag": "\"a\""],
                                                     url: url.absoluteString), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 400)
        _ = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
        let retry = plans(machine.timerFired(.retry(0)))
        #expect(retry.count == 1)
        #expect(retry.first?.allowsHTTP2 == true)
        #expect(retry.first?.range == ByteRange(start: 400, end: 999))
        #expect(retry.first?.ifRange == "\"a\"")
    }

    /// Several connections: the first may share an HTTP/2 connection (a small file never needs
    /// more), every one the split opens is HTTP/1.1 on a TCP connection of its own, unless
    /// `--http2` asks for HTTP/2 everywhere; `--http1.1` holds even a single connection to it.
    @Test(arguments: [(4, HTTPVersionPolicy.automatic, true, false), (4, .http2, true, true), (1, .http1_1, false, false),
                      (2, .http1_1, false, false)])
    func theFirstConnectionAndTheExtraOnes(connections: Int, policy: HTTPVersionPolicy, first: Bool, extra: Bool) throws {
        var machine = try machine(connections: connections, policy)
        let opening = plans(machine.start(.init(partSize: nil, published: false), now: 0))
        var extras: [RequestPlan] = []
        if connections > 1 {
            // The first range answered opens the others.
            extras = plans(machine.responseReceived(0, partial(0, 99, of: 10_000), nowSecondsSince1970: 0, jitter: 0))
        }
        #expect(opening.count == 1 && extras.count == connections - 1, "\(opening) \(extras)")
        #expect(opening.allSatisfy { $0.allowsHTTP2 == first }, "\(opening)")
        #expect(extras.allSatisfy { $0.allowsHTTP2 == extra }, "\(extras)")
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
