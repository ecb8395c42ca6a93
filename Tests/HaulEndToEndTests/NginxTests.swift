import Foundation
import HaulCore
import HaulTesting
import NIOCore
import NIOPosix
import Testing

/// A real peer: nginx's own `Range`, `If-Range` and ETag handling, throttled with `limit_rate`,
/// against a `kill -9` of the real binary. `.ci/run` installs nginx; elsewhere the test runs
/// when nginx is on the PATH.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: Nginx.binary != nil, "nginx is not installed (.ci/run installs it)"))
struct NginxTests {
    @Test func killNineThenResumeAgainstNginx() async throws {
        // 10 MB at 600 KB/s: 17 s, so the kill lands mid-download however late a loaded machine
        // lets this test see the first checkpoint (2.5 MB ended first in a clean-clone CI run).
        let payload = Payload(seed: 77, length: 10_000_000)
        // Slow enough that the first run is still downloading when it is killed (at 600k a loaded
        // CI machine let it finish first, and the second run then rightly found the old file complete).
        let nginx = try await Nginx.start(payload: payload, name: "real.bin", rateLimit: "100k")
        let url = "http://127.0.0.1:\(nginx.port)/real.bin"
        let world = World(server: try await TestServer.start(), directory: nginx.downloads, home: nginx.root + "/home")

        let first = try HaulProcess(
            ["get", url, "--quiet", "-x", "1", "--checkpoint-interval", "0.05"], home: world.home,
            workingDirectory: world.directory)
        let checkpoint = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        let stored = try #require(try await world.storedRecord())
        #expect(stored.validator?.etag?.isEmpty == false, "nginx's ETag was kept for If-Range")

        let second = try await HaulProcess.run(["get", url, "--quiet", "-x", "1"], in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/real.bin") == nil)

        let log = try String(contentsOfFile: nginx.accessLog, encoding: .utf8).split(separator: "\n")
        #expect(log.count == 2, "\(log)")
        let resumed = try #require(log.last).split(separator: " ")
        #expect(resumed[0] == "206", "\(log)")
        let start = Int64(resumed[1].dropFirst("bytes=".count).prefix { $0 != "-" }) ?? -1
        #expect(start >= checkpoint && start > 0, "resumed at \(start), checkpoint \(checkpoint)")
        #expect(resumed[2] != "-", "If-Range was sent: \(log)")

        try await world.server.shutdown()
        await nginx.stop()
    }

    /// The file is replaced by a longer one between two runs: nginx answers the `If-Range`
    /// resume with 200 and the whole new file, which must be kept whole.
    @Test func aLongerFileAfterKillNineIsFetchedWhole() async throws {
        // Ten seconds at 600k: the first run is still downloading when it is killed (with 2.5 MB a
        // loaded CI machine let it finish first, and the second run rightly found the file complete).
        let payload = Payload(seed: 78, length: 6_000_000)
        let longer = Payload(seed: 79, length: 8_000_000)
        let nginx = try await Nginx.start(payload: payload, name: "real.bin", rateLimit: "600k")
        let url = "http://127.0.0.1:\(nginx.port)/real.bin"
        let world = World(server: try await TestServer.start(), directory: nginx.downloads, home: nginx.root + "/home")

        let first = try HaulProcess(
            ["get", url, "--quiet", "-x", "1", "--checkpoint-interval", "0.05"], home: world.home,
            workingDirectory: world.directory)
        _ = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        _ = await first.wait()
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/real.bin"), "killed before it finished")
        // A new version of the file, put in place as a deploy would: write aside, rename over.
        let served = nginx.root + "/www/real.bin"
        try Data(longer.bytes(0..<longer.length)).write(to: URL(fileURLWithPath: served + ".new"))
        _ = rename(served + ".new", served)

        let second = try await HaulProcess.run(["get", url, "--quiet", "-x", "1"], in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(longer.mismatch(inFileAt: world.directory + "/real.bin") == nil)
        let log = try String(contentsOfFile: nginx.accessLog, encoding: .utf8).split(separator: "\n")
        #expect(log.last?.hasPrefix("200 ") == true, "nginx sent the new file whole: \(log)")

        try await world.server.shutdown()
        await nginx.stop()
    }
}

/// nginx started by hand with its own configuration under a temporary prefix.
struct Nginx {
    static let binary: String? = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    let process: Process
    let port: Int
    let root: String
    var downloads: String { root + "/downloads" }
    var accessLog: String { root + "/access.log" }

    /// `tls`: HTTPS with that certificate, offering HTTP/2 through ALPN. The access log has one
    /// line per request: status, `Range`, `If-Range`, the protocol (`HTTP/1.1`, `HTTP/2.0`), the
    /// serial number of the TCP connection it came over, and the body bytes sent.
    static func start(payload: Payload, name: String, rateLimit: String = "0", tls: TLSFiles? = nil) async throws
        -> Nginx
    {
        let root = NSTemporaryDirectory() + "haul-nginx-\(UUID().uuidString)"
        for directory in ["www", "downloads", "tmp", "logs"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        try Data(payload.bytes(0..<payload.length)).write(to: URL(fileURLWithPath: root + "/www/" + name))
        let port = try await freePort()
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            \(getuid() == 0 ? "user root root;" : "")
            pid \(root)/nginx.pid;
            error_log \(root)/logs/error.log warn;
            events { worker_connections 16; }
            http {
                log_format ranges '$status $http_range $http_if_range $server_protocol $connection $body_bytes_sent';
                access_log \(root)/access.log ranges;
                client_body_temp_path \(root)/tmp/body;
                proxy_temp_path \(root)/tmp/proxy;
                fastcgi_temp_path \(root)/tmp/fastcgi;
                uwsgi_temp_path \(root)/tmp/uwsgi;
                scgi_temp_path \(root)/tmp/scgi;
                default_type application/octet-stream;
                server {
                    \(listen(port: port, tls: tls))
                    root \(root)/www;
                    limit_rate \(rateLimit);
                }
            }
            """
        try config.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary!)
        process.arguments = ["-p", root, "-c", root + "/nginx.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let nginx = Nginx(process: process, port: port, root: root)
        try await nginx.waitUntilListening()
        return nginx
    }

    /// The `listen` line, and for HTTPS the certificate and HTTP/2: `http2 on;` from nginx
    /// 1.25.1, `listen ... ssl http2` before (Debian 12 has 1.22).
    static func listen(port: Int, tls: TLSFiles?) -> String {
        guard let tls else { return "listen 127.0.0.1:\(port);" }
        let http2 =
            (version.map { $0.lexicographicallyPrecedes([1, 25, 1]) } ?? true)
            ? "listen 127.0.0.1:\(port) ssl http2;" : "listen 127.0.0.1:\(port) ssl;\n    http2 on;"
        return http2 + "\n    ssl_certificate \(tls.certificatePath);\n    ssl_certificate_key \(tls.privateKeyPath);"
    }

    /// nginx's version, as numbers.
    static let version: [Int]? = {
        guard let text = describe(), let slash = text.range(of: "nginx/") else { return nil }
        return text[slash.upperBound...].prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap {
            Int($0)
        }
    }()

    /// Built with HTTP/2 and TLS (Debian's nginx is).
    static let hasHTTP2: Bool =
        describe().map { $0.contains("--with-http_v2_module") && $0.contains("--with-http_ssl_module") } ?? false

    /// What `nginx -V` says (on stderr): version and build options.
    static func describe() -> String? {
        guard let binary else { return nil }
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-V"]
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    /// The access log's lines, split into fields.
    func logLines() throws -> [[Substring]] {
        try String(contentsOfFile: accessLog, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
    }

    /// A port the kernel just handed out and released.
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(
            host: "127.0.0.1", port: 0
        ).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return port
    }

    func waitUntilListening() async throws {
        for _ in 0..<200 {
            if let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            {
                try? await channel.close()
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw NginxError.didNotStart((try? String(contentsOfFile: root + "/logs/error.log", encoding: .utf8)) ?? "")
    }

    /// SIGQUIT asks for a graceful stop; SIGKILL follows if nginx is still there, and the wait
    /// polls instead of blocking a test thread.
    func stop() async {
        kill(process.processIdentifier, SIGQUIT)
        for attempt in 0..<100 where process.isRunning {
            if attempt == 40 { kill(process.processIdentifier, SIGKILL) }
            try? await Task.sleep(for: .milliseconds(25))
        }
        try? FileManager.default.removeItem(atPath: root)
    }

    enum NginxError: Error { case didNotStart(String) }
}
