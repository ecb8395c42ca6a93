import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// The transport through a real proxy (Debian's tinyproxy, started by each test) and the rules
/// for credentials: `Authorization` to the origin only, never in an error.
@Suite(.timeLimit(.minutes(3))) struct ProxyTransportTests {
    static let hasTinyproxy = TinyProxy.executable != nil

    func fetch(_ transport: AsyncHTTPTransport, _ plan: RequestPlan) async throws -> (ResponseHead, [UInt8]) {
        let (head, body) = try await transport.send(plan)
        var bytes: [UInt8] = []
        while let chunk = try await body.next() { chunk.withUnsafeBytes { bytes += $0 } }
        return (head, bytes)
    }

    func plan(_ url: String, range: ByteRange? = nil, credentials: Credentials? = nil) throws -> RequestPlan {
        RequestPlan(url: try RemoteURL(url), range: range, ifRange: nil, headers: [:], credentials: credentials)
    }

    /// Runs `body` with a started tinyproxy and a transport, and stops both whatever happens.
    func withProxy(
        basicAuth: (user: String, password: String)? = nil, connectPorts: [Int]? = nil,
        _ body: (TinyProxy) async throws -> Void
    ) async throws {
        let proxy = try await TinyProxy.start(basicAuth: basicAuth, connectPorts: connectPorts)
        do {
            try await body(proxy)
        } catch {
            proxy.stop()
            throw error
        }
        proxy.stop()
    }

    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func plainHTTPGoesThroughTheProxy() async throws {
        let payload = Payload(seed: 90, length: 150_000)
        let server = try await TestServer.start()
        server.setRoute("/file", Route(payload: payload))
        try await withProxy { proxy in
            let settings = try ProxySettings(environment: [
                "http_proxy": "127.0.0.1:\(proxy.port)", "https_proxy": "http://127.0.0.1:1",
            ])
            let transport = AsyncHTTPTransport(configuration: .init(proxies: settings))
            let (head, bytes) = try await fetch(transport, plan(server.url("/file")))
            await transport.shutdown()
            #expect(head.status == 200)
            #expect(bytes == payload.bytes(0..<payload.length))
            #expect(proxy.tunnels() == ["127.0.0.1:\(server.port)"], "\(proxy.log)")
            #expect(server.requests(to: "/file").count == 1)
            #expect(server.requests(to: "/file").first?.header("User-Agent") == "haul/\(HaulVersion.current)")
        }
        try await server.shutdown()
    }

    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func httpsGoesThroughAConnectTunnel() async throws {
        let payload = Payload(seed: 91, length: 80_000)
        let tls = try TLSFiles.makeSelfSigned()
        let server = try await TestServer.start(tls: tls)
        server.setRoute("/secure", Route(payload: payload))
        try await withProxy { proxy in
            // all_proxy covers https when https_proxy is not set; http_proxy must not be used.
            let settings = try ProxySettings(environment: ["ALL_PROXY": proxy.url, "http_proxy": "http://127.0.0.1:1"])
            let transport = AsyncHTTPTransport(
                configuration: .init(
                    additionalTrustRoots: [tls.certificatePath], proxies: settings,
                    userAgent: "custom-agent/1"))
            let (head, bytes) = try await fetch(transport, plan(server.url("/secure")))
            await transport.shutdown()
            #expect(head.status == 200)
            #expect(bytes == payload.bytes(0..<payload.length))
            #expect(proxy.tunnels() == ["127.0.0.1:\(server.port)"], "\(proxy.log)")
            #expect(server.requests(to: "/secure").first?.header("User-Agent") == "custom-agent/1")
        }
        try await server.shutdown()
    }

    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func aResumeRangeGoesThroughTheProxy() async throws {
        let payload = Payload(seed: 92, length: 100_000)
        let server = try await TestServer.start()
        server.setRoute("/file", Route(payload: payload))
        try await withProxy { proxy in
            let transport = AsyncHTTPTransport(
                configuration: .init(proxies: try ProxySettings(environment: [:], proxy: proxy.url)))
            let (head, bytes) = try await fetch(transport, plan(server.url("/file"), range: ByteRange(start: 60_000)))
            await transport.shutdown()
            #expect(head.status == 206)
            #expect(head.headers["Content-Range"] == "bytes 60000-99999/100000")
            #expect(bytes == payload.bytes(60_000..<100_000))
            #expect(server.requests(to: "/file").first?.range == "bytes=60000-")
            #expect(proxy.tunnels() == ["127.0.0.1:\(server.port)"], "\(proxy.log)")
        }
        try await server.shutdown()
    }

    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func noProxyHostsGoDirect() async throws {
        let payload = Payload(seed: 93, length: 10_000)
        let server = try await TestServer.start()
        server.setRoute("/file", Route(payload: payload))
        try await withProxy { proxy in
            let bypass = AsyncHTTPTransport(
                configuration: .init(
                    proxies: try ProxySettings(
                        environment: ["http_proxy": proxy.url, "no_proxy": "example.com, 127.0.0.0/8"])))
            let (direct, directBytes) = try await fetch(bypass, plan(server.url("/file")))
            await bypass.shutdown()
            #expect(direct.status == 200 && directBytes.count == 10_000)
            #expect(proxy.tunnels().isEmpty, "\(proxy.log)")

            // The same settings without the matching entry use the proxy.
            let proxied = AsyncHTTPTransport(
                configuration: .init(
                    proxies: try ProxySettings(
                        environment: ["http_proxy": proxy.url, "no_proxy": "example.com, 10.0.0.0/8"])))
            let (head, _) = try await fetch(proxied, plan(server.url("/file")))
            await proxied.shutdown()
            #expect(head.status == 200)
            #expect(proxy.tunnels() == ["127.0.0.1:\(server.port)"], "\(proxy.log)")
        }
        try await server.shutdown()
    }

    /// Each hop of a redirect takes the proxy its own URL calls for: here the first server is
    /// excluded by `no_proxy` with its port, the second is not.
    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func eachRedirectHopChoosesItsOwnProxy() async throws {
        let payload = Payload(seed: 94, length: 5_000)
        let first = try await TestServer.start()
        let second = try await TestServer.start()
        second.setRoute("/file", Route(payload: payload))
        first.setRoute("/start", Route(payload: payload, then: .redirect(to: second.url("/file"))))
        try await withProxy { proxy in
            let transport = AsyncHTTPTransport(
                configuration: .init(
                    proxies: try ProxySettings(
                        environment: ["http_proxy": proxy.url], noProxy: "127.0.0.1:\(first.port)")))
            let (head, bytes) = try await fetch(transport, plan(first.url("/start")))
            await transport.shutdown()
            #expect(head.status == 200 && bytes.count == 5_000)
            #expect(head.url == second.url("/file"))
            #expect(proxy.tunnels() == ["127.0.0.1:\(second.port)"], "\(proxy.log)")
            #expect(first.requests(to: "/start").count == 1)
        }
        try await first.shutdown()
        try await second.shutdown()
    }

    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func proxyCredentialsAreSentAndWrongOnesRefused() async throws {
        let payload = Payload(seed: 95, length: 20_000)
        let server = try await TestServer.start()
        server.setRoute("/file", Route(payload: payload))
        try await withProxy(basicAuth: ("proxyuser", "proxypass")) { proxy in
            // AsyncHTTPClient retries a refused tunnel until the connect timeout: keep it short.
            func transport(_ proxyURL: String) throws -> AsyncHTTPTransport {
                AsyncHTTPTransport(
                    configuration: .init(
                        connectTimeout: .seconds(2),
                        proxies: try ProxySettings(environment: ["http_proxy": proxyURL])))
            }
            let good = try transport("http://proxyuser:proxypass@127.0.0.1:\(proxy.port)")
            let (head, bytes) = try await fetch(good, plan(server.url("/file")))
            await good.shutdown()
            #expect(head.status == 200 && bytes == payload.bytes(0..<payload.length))
            // The proxy's credentials are for the proxy: the origin never sees them.
            #expect(server.requests(to: "/file").first?.header("Proxy-Authorization") == nil)
            #expect(server.requests(to: "/file").first?.header("Authorization") == nil)

            let none = try transport(proxy.url)
            let missing = await #expect(throws: HaulError.self) { try await fetch(none, plan(server.url("/file"))) }
            await none.shutdown()
            #expect(missing?.httpStatus == 407)
            #expect(
                missing?.message
                    == """
                    \(server.url("/file")): the proxy http://127.0.0.1:\(proxy.port) wants credentials (HTTP 407 \
                    Proxy Authentication Required)
                    """
            )

            let wrong = try transport("http://proxyuser:WRONGpass@127.0.0.1:\(proxy.port)")
            let refused = await #expect(throws: HaulError.self) { try await fetch(wrong, plan(server.url("/file"))) }
            await wrong.shutdown()
            let error = try #require(refused)
            #expect(error.code == .network)
            #expect(
                error.message
                    == "\(server.url("/file")): the proxy http://127.0.0.1:\(proxy.port) refused the CONNECT tunnel "
                    + "(wrong proxy credentials, or the proxy allows CONNECT only to some ports, such as 443)")
            #expect(!"\(error)".contains("WRONGpass") && !String(reflecting: error).contains("WRONGpass"))
            // Only the request with the right credentials reached the server.
            #expect(server.requests(to: "/file").count == 1)
        }
        try await server.shutdown()
    }

    /// AsyncHTTPClient tunnels http:// through CONNECT as well, which proxies that allow
    /// CONNECT only to 443 (Debian's tinyproxy configuration, Squid's) refuse: the error says so.
    @Test(.enabled(if: hasTinyproxy, "tinyproxy is not installed (.ci/run installs it)"))
    func aProxyThatRefusesTheTunnelIsNamed() async throws {
        let server = try await TestServer.start()
        server.setRoute("/file", Route(payload: Payload(seed: 99, length: 100)))
        try await withProxy(connectPorts: [443]) { proxy in
            let transport = AsyncHTTPTransport(
                configuration: .init(
                    connectTimeout: .seconds(2),
                    proxies: try ProxySettings(environment: ["http_proxy": proxy.url])))
            let refused = await #expect(throws: HaulError.self) {
                try await fetch(transport, plan(server.url("/file")))
            }
            await transport.shutdown()
            #expect(refused?.code == .network)
            #expect(
                refused?.message
                    == "\(server.url("/file")): the proxy http://127.0.0.1:\(proxy.port) refused the CONNECT tunnel "
                    + "(the proxy may allow CONNECT only to some ports, such as 443)")
            #expect(proxy.tunnels().contains("127.0.0.1:\(server.port)"), "\(proxy.log)")
            #expect(server.requests.isEmpty)
        }
        try await server.shutdown()
    }

    @Test func anUnreachableProxyIsNamedInTheError() async throws {
        let dead = try LoopbackPort.Refusing()
        let deadPort = dead.port
        defer { withExtendedLifetime(dead) {} }
        let transport = AsyncHTTPTransport(
            configuration: .init(
                connectTimeout: .seconds(2),
                proxies: try ProxySettings(
                    environment: ["http_proxy": "http://puser:psecret@127.0.0.1:\(deadPort)"])))
        let thrown = await #expect(throws: HaulError.self) {
            try await fetch(transport, plan("http://user:s3cret@127.0.0.1:9/file"))
        }
        await transport.shutdown()
        let error = try #require(thrown)
        #expect(error.code == .network)
        #expect(error.message == "http://127.0.0.1:9/file: cannot connect to the proxy 127.0.0.1:\(deadPort)")
        for text in ["\(error)", String(reflecting: error), error.cause ?? ""] {
            #expect(!text.contains("s3cret") && !text.contains("psecret"), "\(text)")
        }
    }

    @Test func authorizationGoesToTheOriginOnly() async throws {
        let payload = Payload(seed: 96, length: 4_000)
        let origin = try await TestServer.start()
        let other = try await TestServer.start()
        other.setRoute("/file", Route(payload: payload))
        origin.setRoute("/file", Route(payload: payload))
        origin.setRoute("/same", Route(payload: payload, then: .redirect(to: "/file", status: 301)))
        origin.setRoute("/away", Route(payload: payload, then: .redirect(to: other.url("/file"), status: 307)))
        let credentials = Credentials(user: "alice", password: "s3cret:with colon")
        let expected = "Basic " + Data("alice:s3cret:with colon".utf8).base64EncodedString()
        let transport = AsyncHTTPTransport()

        let (same, _) = try await fetch(transport, plan(origin.url("/same"), credentials: credentials))
        #expect(same.status == 200 && same.url == origin.url("/file"))
        #expect(origin.requests(to: "/same").map { $0.header("Authorization") } == [expected])
        #expect(origin.requests(to: "/file").map { $0.header("Authorization") } == [expected])

        let (away, bytes) = try await fetch(transport, plan(origin.url("/away"), credentials: credentials))
        #expect(away.status == 200 && away.url == other.url("/file") && bytes.count == 4_000)
        #expect(origin.requests(to: "/away").map { $0.header("Authorization") } == [expected])
        let atOther = other.requests(to: "/file")
        #expect(atOther.count == 1)
        #expect(atOther.first.map { $0.header("Authorization") == nil } == true)
        #expect(atOther.first?.headers.contains { $0.value.contains("s3cret") } == false)
        await transport.shutdown()
        try await origin.shutdown()
        try await other.shutdown()
    }

    @Test func credentialsInTheURLAreSentButNeverShown() async throws {
        let server = try await TestServer.start()
        server.setRoute("/private", Route(payload: Payload(seed: 97, length: 10), then: .status(401)))
        let url = try RemoteURL(server.url("/private").replacingOccurrences(of: "://", with: "://bob:hunter2@"))
        #expect(url.absoluteString == server.url("/private"))
        let transport = AsyncHTTPTransport()
        let (head, _) = try await fetch(
            transport,
            RequestPlan(
                url: url, range: nil, ifRange: nil, headers: [:],
                credentials: url.credentials))
        await transport.shutdown()
        #expect(head.status == 401)
        #expect(head.url == server.url("/private"))
        #expect(
            server.requests(to: "/private").first?.header("Authorization")
                == "Basic " + Data("bob:hunter2".utf8).base64EncodedString())
        let verdict = ResponseCheck.evaluate(
            head, asked: RequestPlan(url: url, range: nil, ifRange: nil, headers: [:]),
            next: 0, partEnd: nil, resuming: false, requested: nil, validator: nil,
            total: nil, nowSecondsSince1970: 0)
        guard case .fail(let error) = verdict else {
            Issue.record("\(verdict)")
            return
        }
        #expect(error.message == "\(server.url("/private")): HTTP 401 Unauthorized")
        #expect(!"\(error)".contains("hunter2"))
        try await server.shutdown()
    }

    @Test func redirectLimitAndLoopsAreTooManyRedirects() async throws {
        let payload = Payload(seed: 98, length: 100)
        let server = try await TestServer.start()
        server.setRoute("/1", Route(payload: payload, then: .redirect(to: "/2")))
        server.setRoute("/2", Route(payload: payload, then: .redirect(to: "/3")))
        server.setRoute("/3", Route(payload: payload, then: .redirect(to: "/file")))
        server.setRoute("/file", Route(payload: payload))
        server.setRoute("/loop-a", Route(payload: payload, then: .redirect(to: "/loop-b")))
        server.setRoute("/loop-b", Route(payload: payload, then: .redirect(to: "/loop-a")))
        let transport = AsyncHTTPTransport(configuration: .init(maxRedirects: 2))
        let limit = await #expect(throws: HaulError.self) { try await fetch(transport, plan(server.url("/1"))) }
        #expect(limit?.code == .tooManyRedirects)
        #expect(limit?.message == "\(server.url("/1")): too many redirects")
        #expect(server.requests(to: "/file").isEmpty)
        let (head, _) = try await fetch(transport, plan(server.url("/2")))
        #expect(head.status == 200 && head.url == server.url("/file"))
        let loop = await #expect(throws: HaulError.self) { try await fetch(transport, plan(server.url("/loop-a"))) }
        #expect(loop?.code == .tooManyRedirects)
        #expect(server.requests(to: "/loop-a").count == 1)
        await transport.shutdown()
        try await server.shutdown()
    }
}
