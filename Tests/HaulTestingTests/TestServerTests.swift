import Foundation
import HaulTesting
import Testing

@Suite(.timeLimit(.minutes(2))) struct TestServerTests {
    let payload = Payload(seed: 7, length: 1_000)

    @Test func servesTheWholePayloadWith200() async throws {
        try await withServer(Route(payload: payload)) { server in
            let response = try await curl(server.url("/f?x=1"))
            #expect(response.exitCode == 0)
            #expect(response.status == 200)
            #expect(
                response.headerLines == [
                    "Content-Type: application/octet-stream",
                    "Content-Length: 1000",
                    "Accept-Ranges: bytes",
                    "ETag: \"7-1000\"",
                ])
            #expect(response.body == payload.data(0..<1_000))

            let request = try #require(server.requests.first)
            #expect(request.method == "GET")
            #expect(request.path == "/f")
            #expect(request.uri == "/f?x=1")
            #expect(request.header("user-agent")?.hasPrefix("curl/") == true)
            #expect(request.range == nil)
            #expect(server.requests(to: "/f").count == 1)
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 1_000 })
        }
    }

    @Test func sendsOptionalHeadersWhenConfigured() async throws {
        let route = Route(
            payload: payload,
            etag: nil,
            lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
            contentDisposition: "attachment; filename=\"a b.bin\"",
            acceptsRanges: false
        )
        try await withServer(route) { server in
            let response = try await curl(server.url("/f"), ["-H", "Range: bytes=0-9"])
            #expect(response.status == 200)
            #expect(
                response.headerLines == [
                    "Content-Type: application/octet-stream",
                    "Content-Length: 1000",
                    "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT",
                    "Content-Disposition: attachment; filename=\"a b.bin\"",
                ])
            #expect(response.body == payload.data(0..<1_000))
        }
    }

    @Test(
        arguments: [
            ("bytes=100-199", "bytes 100-199/1000", 100..<200),
            ("bytes=900-", "bytes 900-999/1000", 900..<1_000),
            ("bytes=-100", "bytes 900-999/1000", 900..<1_000),
            ("bytes=990-5000", "bytes 990-999/1000", 990..<1_000),
            ("bytes=-5000", "bytes 0-999/1000", 0..<1_000),
        ] as [(String, String, Range<Int64>)])
    func answersRangesWith206(range: String, contentRange: String, expected: Range<Int64>) async throws {
        try await withServer(Route(payload: payload)) { server in
            let response = try await curl(server.url("/f"), ["-H", "Range: \(range)"])
            #expect(response.status == 206)
            #expect(
                response.headerLines == [
                    "Content-Type: application/octet-stream",
                    "Content-Range: \(contentRange)",
                    "Content-Length: \(expected.count)",
                    "Accept-Ranges: bytes",
                    "ETag: \"7-1000\"",
                ])
            #expect(response.body == payload.data(expected))
            #expect(server.requests.first?.range == range)
        }
    }

    @Test func answersUnsatisfiableRangesWith416() async throws {
        try await withServer(Route(payload: payload)) { server in
            let response = try await curl(server.url("/f"), ["-H", "Range: bytes=1000-"])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */1000")
            #expect(response.header("Content-Length") == "0")
            #expect(response.body.isEmpty)
        }
    }

    @Test func ignoresMalformedRanges() async throws {
        try await withServer(Route(payload: payload)) { server in
            for range in ["bytes=abc", "bytes=5-1", "items=0-1", "bytes=0-1,5-6"] {
                let response = try await curl(server.url("/f"), ["-H", "Range: \(range)"])
                #expect(response.status == 200, "\(range)")
                #expect(response.body == payload.data(0..<1_000), "\(range)")
            }
        }
    }

    @Test func ifRangeMismatchGivesTheWholeBody() async throws {
        let route = Route(payload: payload, lastModified: "Wed, 21 Oct 2015 07:28:00 GMT")
        try await withServer(route) { server in
            let stale = try await curl(server.url("/f"), ["-H", "Range: bytes=500-", "-H", "If-Range: \"old\""])
            #expect(stale.status == 200)
            #expect(stale.header("Content-Range") == nil)
            #expect(stale.body == payload.data(0..<1_000))

            let byETag = try await curl(server.url("/f"), ["-H", "Range: bytes=500-", "-H", "If-Range: \"7-1000\""])
            #expect(byETag.status == 206)
            #expect(byETag.body == payload.data(500..<1_000))

            let byDate = try await curl(
                server.url("/f"),
                ["-H", "Range: bytes=500-", "-H", "If-Range: Wed, 21 Oct 2015 07:28:00 GMT"]
            )
            #expect(byDate.status == 206)
            #expect(byDate.header("Content-Range") == "bytes 500-999/1000")
        }
    }

    @Test func scriptedIgnoreRangeThenNormal() async throws {
        try await withServer(Route(payload: payload, script: [.ignoreRange])) { server in
            let first = try await curl(server.url("/f"), ["-H", "Range: bytes=100-"])
            #expect(first.status == 200)
            #expect(first.header("Content-Length") == "1000")
            #expect(first.body == payload.data(0..<1_000))

            let second = try await curl(server.url("/f"), ["-H", "Range: bytes=100-"])
            #expect(second.status == 206)
            #expect(second.body == payload.data(100..<1_000))
        }
    }

    @Test func dropAfterClosesTheConnectionMidBody() async throws {
        try await withServer(Route(payload: payload, then: .dropAfter(100))) { server in
            let response = try await curl(server.url("/f"))
            #expect(response.exitCode == 18) // CURLE_PARTIAL_FILE
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "1000")
            #expect(response.body == payload.data(0..<100))

            let ranged = try await curl(server.url("/f"), ["-H", "Range: bytes=500-"])
            #expect(ranged.exitCode == 18)
            #expect(ranged.status == 206)
            #expect(ranged.body == payload.data(500..<600))
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 200 })
        }
    }

    @Test func lyingContentLengthAdvertisesMoreThanItSends() async throws {
        try await withServer(Route(payload: payload, script: [.lyingContentLength(extra: 50)])) { server in
            let response = try await curl(server.url("/f"))
            #expect(response.exitCode == 18)
            #expect(response.header("Content-Length") == "1050")
            #expect(response.body == payload.data(0..<1_000))
        }
    }

    @Test func wrongContentRangeShiftsTheAnswer() async throws {
        try await withServer(Route(payload: payload, script: [.wrongContentRange(shift: 10)])) { server in
            let response = try await curl(server.url("/f"), ["-H", "Range: bytes=100-199"])
            #expect(response.status == 206)
            #expect(response.header("Content-Range") == "bytes 110-209/1000")
            #expect(response.header("Content-Length") == "100")
            #expect(response.body == payload.data(110..<210))
        }
    }

    @Test func statusFaultSendsTheGivenStatusAndHeaders() async throws {
        let route = Route(payload: payload, script: [.status(503, headers: [("Retry-After", "7")]), .status(404)])
        try await withServer(route) { server in
            let unavailable = try await curl(server.url("/f"))
            #expect(unavailable.status == 503)
            #expect(
                unavailable.headerLines == [
                    "Retry-After: 7",
                    "Content-Type: text/plain; charset=utf-8",
                    "Content-Length: 24",
                ])
            #expect(String(decoding: unavailable.body, as: UTF8.self) == "503 Service Unavailable\n")

            let missing = try await curl(server.url("/f"))
            #expect(missing.status == 404)
            #expect(String(decoding: missing.body, as: UTF8.self) == "404 Not Found\n")

            let normal = try await curl(server.url("/f"))
            #expect(normal.status == 200)
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 1_000 })
        }
    }

    @Test func documentFaultSendsTheTextAsTheWholeBody() async throws {
        let text = "<?xml version=\"1.0\"?><metalink/>\n"
        let route = Route(
            payload: payload, script: [.document(text, headers: [("Content-Type", "application/metalink4+xml")])])
        try await withServer(route) { server in
            let document = try await curl(server.url("/f"))
            #expect(document.status == 200)
            #expect(document.header("Content-Type") == "application/metalink4+xml")
            #expect(document.header("Content-Length") == String(text.utf8.count))
            #expect(String(decoding: document.body, as: UTF8.self) == text)
            #expect(try await curl(server.url("/f")).body == payload.data(0..<1_000), "then the payload")
        }
    }

    @Test func unknownPathsGet404() async throws {
        try await withServer { server in
            let response = try await curl(server.url("/nothing"))
            #expect(response.status == 404)
            #expect(server.requests.map(\.path) == ["/nothing"])
        }
    }

    @Test func redirectSendsAnAbsoluteLocation() async throws {
        try await withServer(Route(payload: payload)) { server in
            server.setRoute("/old", Route(payload: payload, then: .redirect(to: "/f")))
            server.setRoute("/moved", Route(payload: payload, then: .redirect(to: "/f", status: 301)))

            let response = try await curl(server.url("/old"))
            #expect(response.status == 302)
            #expect(response.header("Location") == server.url("/f"))
            #expect(response.header("Location") == "http://127.0.0.1:\(server.port)/f")

            let permanent = try await curl(server.url("/moved"))
            #expect(permanent.status == 301)

            let followed = try await curl(server.url("/old"), ["-L"])
            #expect(followed.status == 200)
            #expect(followed.body == payload.data(0..<1_000))
            #expect(server.requests.map(\.path) == ["/old", "/moved", "/old", "/f"])
        }
    }

    @Test func chunkedRoutesUseChunkedFraming() async throws {
        let small = Payload(seed: 5, length: 100)
        try await withServer(Route(payload: small, chunked: true)) { server in
            let response = try await curl(server.url("/f"), ["--raw"])
            #expect(response.status == 200)
            #expect(
                response.headerLines == [
                    "Content-Type: application/octet-stream",
                    "Transfer-Encoding: chunked",
                    "Accept-Ranges: bytes",
                    "ETag: \"5-100\"",
                ])
            #expect(response.body == Data(Array("64\r\n".utf8) + small.bytes(0..<100) + Array("\r\n0\r\n\r\n".utf8)))

            let decoded = try await curl(server.url("/f"))
            #expect(decoded.body == small.data(0..<100))
        }
    }

    @Test func chunkedRoutesFallBackToCloseDelimitingForHTTP10() async throws {
        let small = Payload(seed: 5, length: 10)
        try await withServer(Route(payload: small, chunked: true)) { server in
            let received = try rawExchange(port: server.port, "GET /f HTTP/1.0\r\n\r\n")
            let expected =
                Array(
                    ("HTTP/1.1 200 OK\r\n"
                        + "Content-Type: application/octet-stream\r\n"
                        + "Accept-Ranges: bytes\r\n"
                        + "ETag: \"5-10\"\r\n"
                        + "Connection: close\r\n"
                        + "\r\n").utf8
                ) + small.bytes(0..<10)
            #expect(Data(received) == Data(expected))
        }
    }

    @Test func switchEntityChangesTheETagForGood() async throws {
        let replacement = Payload(seed: 8, length: 2_000)
        let route = Route(payload: payload, script: [.none, .switchEntity(replacement, etag: "\"v2\"")])
        try await withServer(route) { server in
            let first = try await curl(server.url("/f"))
            #expect(first.header("ETag") == "\"7-1000\"")

            let resumed = try await curl(server.url("/f"), ["-H", "Range: bytes=500-", "-H", "If-Range: \"7-1000\""])
            #expect(resumed.status == 200)
            #expect(resumed.header("ETag") == "\"v2\"")
            #expect(resumed.header("Content-Length") == "2000")
            #expect(resumed.body == replacement.data(0..<2_000))

            let later = try await curl(server.url("/f"), ["-H", "Range: bytes=500-", "-H", "If-Range: \"v2\""])
            #expect(later.status == 206)
            #expect(later.header("Content-Range") == "bytes 500-1999/2000")
            #expect(later.body == replacement.data(500..<2_000))
        }
    }

    @Test func headAndKeepAliveOnTheWire() async throws {
        let small = Payload(seed: 3, length: 16)
        try await withServer(Route(payload: small)) { server in
            let received = try rawExchange(
                port: server.port,
                "HEAD /f HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /f HTTP/1.1\r\nHost: t\r\nRange: bytes=0-3\r\nConnection: close\r\n\r\n"
            )
            let expected =
                Array(
                    ("HTTP/1.1 200 OK\r\n"
                        + "Content-Type: application/octet-stream\r\n"
                        + "Content-Length: 16\r\n"
                        + "Accept-Ranges: bytes\r\n"
                        + "ETag: \"3-16\"\r\n"
                        + "\r\n"
                        + "HTTP/1.1 206 Partial Content\r\n"
                        + "Content-Type: application/octet-stream\r\n"
                        + "Content-Range: bytes 0-3/16\r\n"
                        + "Content-Length: 4\r\n"
                        + "Accept-Ranges: bytes\r\n"
                        + "ETag: \"3-16\"\r\n"
                        + "Connection: close\r\n"
                        + "\r\n").utf8
                ) + small.bytes(0..<4)
            #expect(String(decoding: received, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
            #expect(received == expected)
            #expect(server.requests.map(\.method) == ["HEAD", "GET"])
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 4 })
        }
    }

    @Test func stallAfterKeepsTheConnectionOpenWithoutSending() async throws {
        try await withServer(Route(payload: payload, script: [.stallAfter(100)])) { server in
            let response = try await curl(server.url("/f"), ["--max-time", "1"])
            #expect(response.exitCode == 28) // CURLE_OPERATION_TIMEDOUT
            #expect(response.status == 200)
            // Timed out by curl (28) with the first 100 bytes in: the connection stayed open, silent.
            #expect(response.body == payload.data(0..<100))
        }
    }

    @Test func aThrottledBodyArrivesWholeAtItsRate() async throws {
        // The pace itself is `ThrottleCredit`'s, checked without waiting (`ThrottleCreditTests`).
        let slow = Payload(seed: 11, length: 4_000)
        try await withServer(Route(payload: slow, throttle: 10_000)) { server in
            let response = try await curl(server.url("/f"))
            #expect(response.body == slow.data(0..<4_000))
            #expect(server.responses(to: "/f").map(\.throttle) == [10_000])
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == 4_000 })
        }
    }

    @Test func largeBodiesStreamIntact() async throws {
        let large = Payload(seed: 99, length: 24 << 20 + 5)
        try await withServer(Route(payload: large)) { server in
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("large-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let response = try await curl(server.url("/f"), output: path)
            #expect(response.exitCode == 0)
            #expect(large.mismatch(inFileAt: path) == nil)
            #expect(try await eventually { server.bodyBytesSent(to: "/f") == large.length })
        }
    }
}
