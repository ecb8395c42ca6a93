import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import Testing

/// The transport as a user meets it through the real binary: a cut TLS connection the server
/// holds does not hold `haul get`, and `-v` and `--json` tell what each download cost on the wire.
@Suite(.timeLimit(.minutes(2))) struct TransportEndToEndTests {
    /// A server that ignores ranges answers `--range` with the whole file, and haul cuts the
    /// request at the range's end; the server then holds that TLS connection (never reads the
    /// close_notify, never closes). `haul get` still exits 0 while the server holds it, and `-v`
    /// counts what the server saw.
    @Test func haulGetExitsWhileTheServerHoldsACutTLSConnection() async throws {
        let tls = try TLSFiles.makeSelfSigned()
        let world = try await World.make(tls: tls)
        let payload = Payload(seed: 2030, length: 8 << 20)
        world.server.setRoute("/held.bin", Route(payload: payload, acceptsRanges: false, script: [.holdAfter(6 << 20)]))
        let result = try await HaulProcess.run(
            [
                "get", world.server.url("/held.bin"), "-x", "1", "--range", "0-6291455", "-v",
                "--cacert", tls.certificatePath,
            ], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/held.bin", range: 0...6_291_455) == nil)
        #expect(world.server.heldConnections == 1, "haul exited though the server holds the connection it cut")
        #expect(world.server.requests(to: "/held.bin").count == 1)
        #expect(
            result.stderr.contains(
                "\(world.server.url("/held.bin")): 1 request over 1 connection (1 TLS handshake), HTTP/1.1\n"),
            "\(result.stderr)")
        try await world.close()
    }

    /// `--json`'s last line carries the counts, with or without `-v`.
    @Test func jsonCarriesRequestsAndConnections() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2031, length: 6 << 20)
        world.server.setRoute("/counted.bin", Route(payload: payload))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/counted.bin"), "-x", "4", "--json"], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        let last = try #require(result.stdout.split(separator: "\n").last)
        let view = try JSONDecoder().decode(EventView.self, from: Data(last.utf8))
        #expect(view.type == .completed)
        #expect(view.requests == world.server.requests(to: "/counted.bin").count)
        #expect(view.connectionsUsed == world.server.connectionCount(to: "/counted.bin"))
        #expect(view.connectionsOpened == view.connectionsUsed)
        #expect(view.tlsHandshakes == 0)
        #expect(view.httpVersions == ["HTTP/1.1"])
        try await world.close()
    }

    @Test func theHTTPVersionFlagsExcludeEachOther() async throws {
        let world = try await World.make()
        for command in [["get", world.server.url("/x")], ["serve", "--port", "0"]] {
            let result = try await HaulProcess.run(command + ["--http1.1", "--http2"], in: world)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(
                result.stderr == "haul: --http1.1 and --http2 exclude each other (see 'haul --help')\n",
                "\(result.stderr)")
        }
        #expect(world.server.requests.isEmpty)
        try await world.close()
    }
}

/// HTTP/2 against a real peer: nginx offering h2 through ALPN. Its access log tells which
/// protocol each request came over.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(if: Nginx.binary != nil && Nginx.hasHTTP2, "nginx with HTTP/2 is not installed (.ci/run installs it)"))
struct NginxHTTP2Tests {
    /// By default every request goes over HTTP/1.1, and a download over K connections uses K TCP
    /// connections (one over one, whatever the file's size: no first piece over another
    /// connection); `--http2` carries them as streams of one connection. A request haul cuts
    /// short (its part was shortened by a steal at the end) closes its connection, and the next
    /// request of that download connection opens a new one: at most K plus the cuts. The counts
    /// `-v` reports are the server's: as many connections and TLS handshakes as nginx saw. The
    /// file is byte-exact every time.
    static let protocolCases: [([String], Int64, String, Int)] = [
        (["-x", "1"], 512 << 10, "HTTP/1.1", 1),
        (["-x", "1"], 24 << 20, "HTTP/1.1", 1),
        (["-x", "4"], 24 << 20, "HTTP/1.1", 4),
        (["-x", "4"], 8 << 20, "HTTP/1.1", 4),
        (["-x", "4", "--http2"], 24 << 20, "HTTP/2.0", 1),
        (["--http1.1"], 24 << 20, "HTTP/1.1", 4),
    ]

    /// The bytes `bytes=A-B` asks for.
    static func range(_ header: some StringProtocol) -> ClosedRange<Int64>? {
        let bounds = header.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
        return bounds.count == 2 && bounds[0] <= bounds[1] ? bounds[0]...bounds[1] : nil
    }

    @Test(arguments: protocolCases)
    func connectionsAndProtocol(flags: [String], length: Int64, expected: String, connections: Int) async throws {
        let payload = Payload(seed: 2040, length: length)
        let tls = try TLSFiles.makeSelfSigned()
        let nginx = try await Nginx.start(payload: payload, name: "h2.bin", tls: tls)
        let world = World(server: try await TestServer.start(), directory: nginx.downloads, home: nginx.root + "/home")
        let url = "https://127.0.0.1:\(nginx.port)/h2.bin"
        let result = try await HaulProcess.run(["get", url, "-v", "--cacert", tls.certificatePath] + flags, in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/h2.bin") == nil)
        let log = try nginx.logLines()
        #expect(!log.isEmpty)
        #expect(log.allSatisfy { $0.count == 6 && $0[3] == expected }, "\(log)")
        let seen = Set(log.map { $0[4] }).count
        // A request cut short shows as another request starting inside its range (nginx's
        // `$body_bytes_sent` cannot tell: on loopback the whole body was in the socket already).
        let ranges = log.compactMap { Self.range($0[1]) }
        let cut = ranges.filter { range in
            ranges.contains { $0.lowerBound > range.lowerBound && range.contains($0.lowerBound) }
        }.count
        #expect(seen <= connections + cut, "nginx saw \(seen) connections, \(cut) requests cut: \(log)")
        #expect(connections == 1 ? seen == 1 : seen > 1, "nginx saw \(seen) connections: \(log)")
        if flags.contains("-x"), flags != ["-x", "1"] { #expect(log.count > 1, "several requests: \(log)") }
        let version = expected == "HTTP/2.0" ? "HTTP/2" : "HTTP/1.1"
        let requests = log.count == 1 ? "1 request" : "\(log.count) requests"
        let over = seen == 1 ? "1 connection (1 TLS handshake)" : "\(seen) connections (\(seen) TLS handshakes)"
        #expect(result.stderr.contains("\(requests) over \(over), \(version)\n"), "\(result.stderr)")
        try await world.server.shutdown()
        await nginx.stop()
    }

    /// A download over HTTP/2 (`--http2`: a large file) killed midway resumes over HTTP/2 from its checkpoint, with
    /// `If-Range`, and the file is byte-exact.
    @Test func resumeOverHTTP2AfterKillNine() async throws {
        let payload = Payload(seed: 2041, length: 10_000_000)
        let tls = try TLSFiles.makeSelfSigned()
        let nginx = try await Nginx.start(payload: payload, name: "h2.bin", rateLimit: "600k", tls: tls)
        let world = World(server: try await TestServer.start(), directory: nginx.downloads, home: nginx.root + "/home")
        let url = "https://127.0.0.1:\(nginx.port)/h2.bin"

        let first = try HaulProcess(
            [
                "get", url, "--quiet", "-x", "1", "--http2", "--cacert", tls.certificatePath,
                "--checkpoint-interval", "0.05",
            ],
            home: world.home, workingDirectory: world.directory)
        let checkpoint = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)

        let second = try await HaulProcess.run(
            ["get", url, "--quiet", "-x", "1", "--http2", "--cacert", tls.certificatePath], in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/h2.bin") == nil)

        let log = try nginx.logLines()
        #expect(log.count == 2, "\(log)")
        #expect(log.allSatisfy { $0[3] == "HTTP/2.0" }, "\(log)")
        let resumed = try #require(log.last)
        #expect(resumed[0] == "206", "\(log)")
        let start = Int64(resumed[1].dropFirst("bytes=".count).prefix { $0 != "-" }) ?? -1
        #expect(start >= checkpoint && start > 0, "resumed at \(start), checkpoint \(checkpoint)")
        #expect(resumed[2] != "-", "If-Range was sent: \(log)")
        try await world.server.shutdown()
        await nginx.stop()
    }
}
