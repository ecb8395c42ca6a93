import Foundation
import HaulCore
import HaulTesting
import Testing

/// Real networks: a real proxy (Debian's tinyproxy, started here), credentials from every
/// source, and never a password in anything haul prints or keeps.
@Suite(.serialized, .timeLimit(.minutes(3))) struct NetworkTests {
    let payload = Payload(seed: 77, length: 2_000_000)

    /// Through the proxy from `http_proxy`, stopped by a kill, resumed through the proxy from
    /// `--proxy`: the second request asks for the rest, both went through the proxy, and the
    /// file is byte-exact.
    @Test(.enabled(if: TinyProxy.executable != nil, "tinyproxy is not installed"))
    func resumeThroughARealProxy() async throws {
        let world = try await World.make()
        let proxy = try await TinyProxy.start()
        defer { proxy.stop() }
        // The body stops midway, so the kill lands mid-download however loaded the machine.
        world.server.setRoute(
            "/big.bin", Route(payload: payload, throttle: 400_000, script: [.stallAfter(payload.length / 2)]))
        let first = try HaulProcess(
            ["get", world.server.url("/big.bin"), "--quiet", "--checkpoint-interval", "0.05"],
            home: world.home, workingDirectory: world.directory,
            environment: ["http_proxy": proxy.url, "no_proxy": ""])
        let checkpoint = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        _ = await first.wait()
        #expect(proxy.tunnels().count == 1, "\(proxy.log)")

        world.server.setRoute("/big.bin", Route(payload: payload))
        let second = try await HaulProcess.run(
            ["get", world.server.url("/big.bin"), "--quiet", "--proxy", proxy.url], in: world,
            environment: ["http_proxy": "http://127.0.0.1:1"])
        #expect(second.status == 0, "\(second.stderr)")
        let resumed = try #require(world.server.requests(to: "/big.bin").last)
        #expect(resumed.rangeStart >= checkpoint && resumed.rangeStart > 0)
        #expect(
            proxy.tunnels() == Array(repeating: "127.0.0.1:\(world.server.port)", count: 2),
            "both runs went through the proxy")
        #expect(world.sha256(of: world.directory + "/big.bin") == payload.sha256)
        try await world.close()
    }

    /// `--noproxy` (and `no_proxy`) reach the server directly: the proxy sees nothing.
    @Test(.enabled(if: TinyProxy.executable != nil, "tinyproxy is not installed"))
    func noProxyGoesDirect() async throws {
        let world = try await World.make()
        let proxy = try await TinyProxy.start()
        defer { proxy.stop() }
        world.server.setRoute("/a.bin", Route(payload: Payload(seed: 1, length: 1000)))
        world.server.setRoute("/b.bin", Route(payload: Payload(seed: 2, length: 1000)))
        let flag = try await HaulProcess.run(
            ["get", "-q", world.server.url("/a.bin"), "--proxy", proxy.url, "--noproxy", "127.0.0.1"],
            in: world)
        let environment = try await HaulProcess.run(
            ["get", "-q", world.server.url("/b.bin")], in: world,
            environment: ["HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.0/8"])
        #expect(flag.status == 0 && environment.status == 0, "\(flag.stderr) \(environment.stderr)")
        #expect(proxy.tunnels().isEmpty, "\(proxy.log)")
        #expect(world.files() == ["a.bin", "b.bin"])
        try await world.close()
    }

    /// Credentials from `--user`, from the URL and from a netrc file reach the server as Basic
    /// authorization, and the password is in nothing haul prints (`-v`, `--json`, errors) or
    /// stores.
    @Test func credentialsFromEverySourceAndNeverShown() async throws {
        let world = try await World.make()
        let secret = "s3cret-pa55"
        for name in ["user", "url", "netrc"] {
            world.server.setRoute("/\(name).bin", Route(payload: Payload(seed: 3, length: 5000)))
        }
        let netrc = world.home + "-netrc"
        try "machine 127.0.0.1 login nina password \(secret)-n\n".write(
            toFile: netrc, atomically: true, encoding: .utf8)
        let port = world.server.port
        let runs = [
            try await HaulProcess.run(
                ["get", "-v", "--json", world.server.url("/user.bin"), "--user", "ulla:\(secret)-u"], in: world),
            try await HaulProcess.run(
                ["get", "-v", "--json", "http://uwe:\(secret)-l@127.0.0.1:\(port)/url.bin"], in: world),
            try await HaulProcess.run(
                ["get", "-v", "--json", world.server.url("/netrc.bin"), "--netrc-file", netrc], in: world),
        ]
        for run in runs {
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret))
        }
        func authorization(_ path: String) -> String? { world.server.requests(to: path).first?.header("Authorization") }
        #expect(authorization("/user.bin") == "Basic " + Data("ulla:\(secret)-u".utf8).base64EncodedString())
        #expect(authorization("/url.bin") == "Basic " + Data("uwe:\(secret)-l".utf8).base64EncodedString())
        #expect(authorization("/netrc.bin") == "Basic " + Data("nina:\(secret)-n".utf8).base64EncodedString())
        let state = try FileManager.default.contentsOfDirectory(atPath: world.home).compactMap {
            FileManager.default.contents(atPath: world.home + "/" + $0)
        }
        #expect(!state.isEmpty)
        #expect(
            state.allSatisfy { !String(decoding: $0, as: UTF8.self).contains(secret) }, "haul get keeps no password")
        try await world.close()
    }

    /// Wrong credentials: the server's 401 is an HTTP error, one line, exit 3, no password.
    @Test func unauthorizedIsAnHTTPErrorOnOneLine() async throws {
        let world = try await World.make()
        world.server.setRoute(
            "/secret.bin",
            Route(payload: payload, then: .status(401, headers: [("WWW-Authenticate", "Basic realm=\"x\"")])))
        let run = try await HaulProcess.run(
            ["get", "-q", world.server.url("/secret.bin"), "-u", "bob:wrong-pw"], in: world)
        #expect(run.status == ExitCodesExpected.http)
        #expect(run.stderr.contains("401"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("wrong-pw"))
        #expect(world.server.requests(to: "/secret.bin").count == 1, "a 401 is not retried")
        try await world.close()
    }

    @Test(arguments: [
        (["--proxy", "ftp://proxy.example"], "proxy"),
        (["--proxy", "http://user:topsecret@[bad"], "proxy"),
        (["--netrc-file", "/nonexistent/netrc"], "/nonexistent/netrc"),
        (["--user", "nopassword"], "--user"),
    ])
    func badNetworkInputIsAUsageError(extra: [String], message: String) async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        world.server.setRoute("/other.bin", Route(payload: payload))
        // Two URLs, one line: the input is refused before any URL is looked at.
        let run = try await HaulProcess.run(
            ["get", "-q", world.server.url("/file.bin"), world.server.url("/other.bin")] + extra, in: world)
        #expect(run.status == ExitCodesExpected.usage, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("topsecret"))
        #expect(world.server.requests.isEmpty)
        try await world.close()
    }

    /// The default user agent names haul's real version; `--user-agent` replaces it.
    @Test func userAgent() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: Payload(seed: 1, length: 100)))
        world.server.setRoute("/b.bin", Route(payload: Payload(seed: 2, length: 100)))
        _ = try await HaulProcess.run(["get", "-q", world.server.url("/a.bin")], in: world)
        _ = try await HaulProcess.run(["get", "-q", world.server.url("/b.bin"), "--user-agent", "probe/1"], in: world)
        #expect(world.server.requests(to: "/a.bin").first?.header("User-Agent") == "haul/\(HaulVersion.current)")
        #expect(world.server.requests(to: "/b.bin").first?.header("User-Agent") == "probe/1")
        try await world.close()
    }
}
