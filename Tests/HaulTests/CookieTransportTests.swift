import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// The transport's cookie jar against the test server: each redirect hop carries the cookies of
/// its own host and path only, and a `Set-Cookie` from one hop goes with the next.
@Suite(.timeLimit(.minutes(2))) struct CookieTransportTests {
    func fetch(_ transport: AsyncHTTPTransport, _ url: String) async throws -> (ResponseHead, [UInt8]) {
        let (head, body) = try await transport.send(
            RequestPlan(url: try RemoteURL(url), range: nil, ifRange: nil, headers: [:]))
        var bytes: [UInt8] = []
        while let chunk = try await body.next() { chunk.withUnsafeBytes { bytes += $0 } }
        return (head, bytes)
    }

    func jar(_ lines: String) throws -> CookieJar {
        try CookieJar(netscapeFile: lines, file: "test", now: WallClockSeconds.now)
    }

    /// A cookie of 127.0.0.1 goes to 127.0.0.1, not to `localhost` a redirect leads to (the same
    /// server, another host name), and a path cookie only below its path.
    @Test func cookiesGoOnlyToTheirHost() async throws {
        let payload = Payload(seed: 31, length: 40_000)
        let server = try await TestServer.start()
        server.setRoute(
            "/dl/start",
            Route(
                payload: payload, script: [.redirect(to: "/dl/file")],
                then: .redirect(to: "http://localhost:\(server.port)/dl/away")))
        server.setRoute("/dl/file", Route(payload: payload))
        server.setRoute("/dl/away", Route(payload: payload))
        let store = CookieStore(
            try jar(
                "127.0.0.1\tFALSE\t/dl\tFALSE\t0\tsid\tsecret-1\n"
                    + "127.0.0.1\tFALSE\t/other\tFALSE\t0\telse\tno\n"))
        let transport = AsyncHTTPTransport(configuration: .init(cookies: store))
        let (head, bytes) = try await fetch(transport, server.url("/dl/start"))
        #expect(head.status == 200 && bytes == payload.bytes(0..<payload.length))
        let (away, awayBytes) = try await fetch(transport, server.url("/dl/start"))
        await transport.shutdown()
        #expect(away.status == 200 && awayBytes == payload.bytes(0..<payload.length))
        #expect(server.requests(to: "/dl/start").map { $0.header("Cookie") } == ["sid=secret-1", "sid=secret-1"])
        #expect(server.requests(to: "/dl/file").map { $0.header("Cookie") } == ["sid=secret-1"], "same host, under /dl")
        let other = try #require(server.requests(to: "/dl/away").first)
        #expect(other.header("Host") == "localhost:\(server.port)")
        #expect(other.header("Cookie") == nil, "another host gets no cookie")
        try await server.shutdown()
    }

    /// A login hop sets a cookie and redirects: the next hop carries it, a later request too, and
    /// the jar holds it for `--save-cookies`.
    @Test func setCookieCarriesAcrossARedirect() async throws {
        let payload = Payload(seed: 32, length: 30_000)
        let server = try await TestServer.start()
        server.setRoute(
            "/login",
            Route(
                payload: payload,
                then: .status(
                    302,
                    headers: [
                        ("Location", server.url("/files/f.bin")), ("Set-Cookie", "token=t-42; Path=/files; HttpOnly"),
                        ("Set-Cookie", "wrong=1; Domain=example.com"),
                    ])))
        server.setRoute("/files/f.bin", Route(payload: payload))
        let store = CookieStore()
        let transport = AsyncHTTPTransport(configuration: .init(cookies: store))
        let (head, bytes) = try await fetch(transport, server.url("/login"))
        _ = try await fetch(transport, server.url("/files/f.bin"))
        await transport.shutdown()
        #expect(head.status == 200 && bytes == payload.bytes(0..<payload.length))
        #expect(server.requests(to: "/login").first?.header("Cookie") == nil)
        #expect(server.requests(to: "/files/f.bin").map { $0.header("Cookie") } == ["token=t-42", "token=t-42"])
        #expect(store.jar.cookies.map(\.name) == ["token"], "a cookie for another domain is not kept")
        #expect(store.jar.cookies.first?.httpOnly == true && store.jar.cookies.first?.domain == "127.0.0.1")
        try await server.shutdown()
    }

    /// Without a jar nothing is sent or kept: the daemon's transport.
    @Test func noJarNoCookies() async throws {
        let payload = Payload(seed: 33, length: 1000)
        let server = try await TestServer.start()
        server.setRoute(
            "/login",
            Route(
                payload: payload,
                script: [
                    .status(
                        302,
                        headers: [
                            ("Location", server.url("/f")), ("Set-Cookie", "token=t; Path=/"),
                        ])
                ]))
        server.setRoute("/f", Route(payload: payload))
        let transport = AsyncHTTPTransport(configuration: .init())
        _ = try await fetch(transport, server.url("/login"))
        await transport.shutdown()
        #expect(server.requests(to: "/f").first?.header("Cookie") == nil)
        try await server.shutdown()
    }
}

enum WallClockSeconds {
    static var now: Int64 { Int64(Date().timeIntervalSince1970) }
}
