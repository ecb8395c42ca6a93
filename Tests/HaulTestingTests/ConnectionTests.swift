import Foundation
import HaulTesting
import Testing

/// Connection caps, per-connection throttles and the response log.
///
/// Throttled responses here last seconds (a lower bound the throttle guarantees), while the
/// requests that must overlap them are sent as soon as the server has logged the previous one,
/// so overlaps hold even on a loaded machine.
@Suite(.timeLimit(.minutes(2))) struct ConnectionTests {
    /// 3 s per 30,000-byte range at 10,000 B/s.
    let payload = Payload(seed: 21, length: 90_000)

    @Test func capRefusesTheRequestBeyondTheLimitWith503AndRetryAfter() async throws {
        let route = Route(
            payload: payload,
            throttle: 10_000,
            connectionCap: ConnectionCap(limit: 2, retryAfter: "3")
        )
        try await withServer(route) { server in
            async let first = curl(server.url("/f"), ["-H", "Range: bytes=0-29999"])
            async let second = curl(server.url("/f"), ["-H", "Range: bytes=30000-59999"])
            #expect(try await eventually { server.responses(to: "/f").count == 2 })
            let third = try await curl(server.url("/f"), ["-H", "Range: bytes=60000-89999"])
            let (a, b) = try await (first, second)

            #expect(third.status == 503)
            #expect(
                third.headerLines == [
                    "Retry-After: 3",
                    "Content-Type: text/plain; charset=utf-8",
                    "Content-Length: 24",
                ])
            #expect(String(decoding: third.body, as: UTF8.self) == "503 Service Unavailable\n")
            #expect(a.status == 206)
            #expect(a.body == payload.data(0..<30_000))
            #expect(b.status == 206)
            #expect(b.body == payload.data(30_000..<60_000))

            let log = server.responses(to: "/f")
            #expect(log.map(\.status).sorted() == [206, 206, 503])
            #expect(log.filter(\.refused).map(\.status) == [503])
            #expect(log.filter(\.refused).map(\.range) == [nil])
            #expect(Set(log.filter { !$0.refused }.compactMap(\.range)) == [0..<30_000, 30_000..<60_000])
            #expect(server.peakConcurrentResponses(to: "/f") == 2)
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 60_000 })
        }
    }

    @Test func capCanAnswer429WithoutRetryAfterAndFreesUpWhenABodyEnds() async throws {
        let route = Route(
            payload: payload,
            throttle: 10_000,
            connectionCap: ConnectionCap(limit: 1, status: 429)
        )
        try await withServer(route) { server in
            async let first = curl(server.url("/f"), ["-H", "Range: bytes=0-29999"])
            #expect(try await eventually { server.responses(to: "/f").count == 1 })
            let refused = try await curl(server.url("/f"), ["-H", "Range: bytes=30000-30099"])
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") == nil)
            #expect(String(decoding: refused.body, as: UTF8.self) == "429 Too Many Requests\n")
            #expect(try await first.body == payload.data(0..<30_000))

            // The first body is done, so the cap lets the next request through.
            let later = try await curl(server.url("/f"), ["-H", "Range: bytes=30000-30099"])
            #expect(later.status == 206)
            #expect(later.body == payload.data(30_000..<30_100))
            #expect(server.responses(to: "/f").map(\.refused) == [false, true, false])
            #expect(server.peakConcurrentResponses(to: "/f") == 1)
        }
    }

    @Test func refusedRequestsDoNotUseUpScriptEntries() async throws {
        let route = Route(
            payload: payload,
            throttle: 10_000,
            script: [.none, .dropAfter(10)],
            connectionCap: ConnectionCap(limit: 1)
        )
        try await withServer(route) { server in
            async let first = curl(server.url("/f"), ["-H", "Range: bytes=0-29999"])
            #expect(try await eventually { server.responses(to: "/f").count == 1 })
            let refused = try await curl(server.url("/f"))
            #expect(refused.status == 503)
            #expect(try await first.status == 206)

            // Script entry 1, not `then`: the refusal did not count.
            let dropped = try await curl(server.url("/f"), ["-H", "Range: bytes=100-"])
            #expect(dropped.exitCode == 18)
            #expect(dropped.body == payload.data(100..<110))

            let normal = try await curl(server.url("/f"), ["-H", "Range: bytes=0-99"])
            #expect(normal.exitCode == 0)
            #expect(normal.body == payload.data(0..<100))
            #expect(server.responses(to: "/f").map(\.refused) == [false, true, false, false])
        }
    }

    @Test func aStalledResponseCountsAgainstTheCapUntilItsConnectionCloses() async throws {
        let route = Route(payload: payload, script: [.stallAfter(100)], connectionCap: ConnectionCap(limit: 1))
        try await withServer(route) { server in
            // Long enough for the refused request to come first on a loaded machine (2 s was not).
            async let stalled = curl(server.url("/f"), ["--max-time", "8"])
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 100 })
            let refused = try await curl(server.url("/f"))
            #expect(refused.status == 503)
            #expect(try await stalled.exitCode == 28) // curl gave up and closed the connection

            let after = try await curl(server.url("/f"), ["-H", "Range: bytes=0-99"])
            #expect(after.status == 206)
            #expect(server.responses(to: "/f").map(\.status) == [200, 503, 206])
            // The last response's bytes are counted when its write completes, which may be just
            // after curl has read them and exited (seen once in a full run on two cores).
            #expect(await server.wait { $0.responses(to: "/f").map(\.bodyBytesSent) == [100, 0, 100] })
        }
    }

    @Test func aBodyGateHoldsBodiesUntilEnoughRequestsArrived() async throws {
        // Two requests open the gate; a refused one counts. With a cap of 1, the second is
        // refused, so the first body is sent only after a refusal came and went.
        let route = Route(payload: payload, connectionCap: ConnectionCap(limit: 1), bodyGate: BodyGate(requests: 2))
        try await withServer(route) { server in
            async let first = curl(server.url("/f"))
            #expect(try await eventually { server.responses(to: "/f").count == 1 })
            // Its head is out and it counts as in flight, but no body byte has been sent.
            #expect(server.bodyBytesSent(to: "/f") == 0)
            let refused = try await curl(server.url("/f"))
            #expect(refused.status == 503)
            let answer = try await first
            #expect(answer.status == 200)
            #expect(answer.body == payload.data(0..<payload.length))
            #expect(server.responses(to: "/f").map(\.refused) == [false, true])
        }
    }

    @Test func aBodyGateOpensAfterItsLongestWait() async throws {
        let route = Route(payload: payload, bodyGate: BodyGate(requests: 5, atMost: .milliseconds(200)))
        try await withServer(route) { server in
            let answer = try await curl(server.url("/f"))
            #expect(answer.status == 200)
            #expect(answer.body == payload.data(0..<payload.length))
        }
    }

    @Test func connectionThrottlesMakeEveryThirdConnectionAStraggler() async throws {
        // Connections 0 and 1 get 4 MiB/s, connection 2 gets 64 KiB/s: when both fast 1 MiB
        // bodies are done (>= 0.25 s), the slow one has sent about 64 KiB per second since it
        // started, so it stays under a quarter of a fast one for 4 s and unfinished for 16 s.
        let large = Payload(seed: 22, length: 1 << 20)
        let route = Route(payload: large, connectionThrottles: [4 << 20, 4 << 20, 64 << 10])
        try await withServer(route) { server in
            async let fast0 = curl(server.url("/f"))
            #expect(try await eventually { server.responses(to: "/f").count == 1 })
            async let fast1 = curl(server.url("/f"))
            #expect(try await eventually { server.responses(to: "/f").count == 2 })
            async let slow = curl(server.url("/f"))
            #expect(try await eventually { server.responses(to: "/f").count == 3 })

            let (a, b) = try await (fast0, fast1)
            let log = server.responses(to: "/f")
            #expect(a.body == large.data(0..<large.length))
            #expect(b.body == large.data(0..<large.length))
            #expect(log.map(\.connection) == [0, 1, 2])
            #expect(log[0].bodyBytesSent == large.length)
            #expect(log[1].bodyBytesSent == large.length)
            #expect(log[2].bodyBytesSent < large.length)
            #expect(log[0].bodyBytesSent >= 4 * log[2].bodyBytesSent, "slow: \(log[2].bodyBytesSent)")
            #expect(server.connectionCount(to: "/f") == 3)

            // Ends the straggler now: curl sees the connection close (exit 18).
            try await server.shutdown()
            #expect(try await slow.exitCode == 18)
        }
    }

    @Test func aConnectionKeepsItsThrottleForEveryRequestOnIt() async throws {
        // Both requests go over curl's one keep-alive connection, the route's first, so both are
        // held to 10,000 B/s; the route's own throttle (none) would send them at full speed.
        let small = Payload(seed: 23, length: 2_000)
        let route = Route(payload: small, connectionThrottles: [10_000, 1 << 30])
        try await withServer(route) { server in
            let response = try await curl(server.url("/f"), [server.url("/f"), "-o", "/dev/null"])
            #expect(response.exitCode == 0)
            #expect(response.body == small.data(0..<2_000))
            #expect(server.responses(to: "/f").map(\.connection) == [0, 0])
            #expect(server.responses(to: "/f").map(\.throttle) == [10_000, 10_000])
            #expect(server.connectionCount(to: "/f") == 1)
        }
    }

    @Test func theResponseLogRecordsStatusRangeConnectionAndBytes() async throws {
        let small = Payload(seed: 3, length: 16)
        let route = Route(payload: small, script: [.none, .none, .dropAfter(5)])
        try await withServer(route) { server in
            server.setRoute("/moved", Route(payload: small, then: .redirect(to: "/f")))
            _ = try rawExchange(
                port: server.port,
                "HEAD /f HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /f HTTP/1.1\r\nHost: t\r\nRange: bytes=2-5\r\n\r\n"
                    + "GET /moved HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            )
            let dropped = try await curl(server.url("/f"))
            #expect(dropped.exitCode == 18)
            let missing = try await curl(server.url("/nothing"))
            #expect(missing.status == 404)

            #expect(
                server.responses(to: "/f") == [
                    ServedResponse(path: "/f", status: 200, connection: 0, range: nil),
                    ServedResponse(path: "/f", status: 206, connection: 0, range: 2..<6, bodyBytesSent: 4),
                    ServedResponse(path: "/f", status: 200, connection: 1, range: 0..<16, bodyBytesSent: 5),
                ])
            #expect(
                server.responses(to: "/moved") == [
                    ServedResponse(path: "/moved", status: 302, connection: 0, range: nil)
                ])
            #expect(server.responses.map(\.path) == ["/f", "/f", "/moved", "/f", "/nothing"])
            #expect(server.responses.last == ServedResponse(path: "/nothing", status: 404, connection: 2, range: nil))
            #expect(server.connectionCount(to: "/f") == 2)
            #expect(server.connectionCount(to: "/moved") == 1)
            #expect(server.connectionCount(to: "/elsewhere") == 0)
            #expect(server.responses(to: "/elsewhere").isEmpty)
        }
    }

    @Test func peakConcurrentResponsesCountsOverlappingBodiesOnly() async throws {
        try await withServer(Route(payload: payload, throttle: 10_000)) { server in
            #expect(server.peakConcurrentResponses(to: "/f") == 0)
            // One after the other (HEAD and text answers never count): the peak stays at 1.
            for _ in 0..<2 {
                let response = try await curl(server.url("/f"), ["-H", "Range: bytes=0-99"])
                #expect(response.status == 206)
            }
            _ = try await curl(server.url("/f"), ["-I"])
            #expect(server.peakConcurrentResponses(to: "/f") == 1)

            // Three 3-second bodies started together overlap.
            async let a = curl(server.url("/f"), ["-H", "Range: bytes=0-29999"])
            async let b = curl(server.url("/f"), ["-H", "Range: bytes=30000-59999"])
            async let c = curl(server.url("/f"), ["-H", "Range: bytes=60000-89999"])
            let bodies = try await [a.body, b.body, c.body]
            #expect(bodies == [payload.data(0..<30_000), payload.data(30_000..<60_000), payload.data(60_000..<90_000)])
            #expect(server.peakConcurrentResponses(to: "/f") == 3)
            #expect(server.connectionCount(to: "/f") == 6)
        }
    }
}
