import Foundation
import HaulAPI
import HaulServer
import HaulTesting
import Testing

/// `haul serve` off loopback (issue 19, item 9): plain HTTP says the token crosses the network
/// in clear text; `--tls-certificate` and `--tls-key` serve HTTPS only. The certificate is made
/// by `openssl` and checked by `curl`, both real peers.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: TLSTools.available, "needs openssl and curl"))
struct DaemonTLSTests {
    let secret = "a-long-enough-secret"

    /// Runs a tool to its end: its status and its output (stdout then stderr).
    private func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func plainHTTPOffLoopbackWarnsThatTheTokenIsSentInClearText() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, ["--host", "0.0.0.0", "--secret", secret])
        defer { daemon.process.signal(SIGKILL) }
        #expect(
            daemon.process.stderr.contains("over plain HTTP") && daemon.process.stderr.contains("--tls-certificate"),
            "\(daemon.process.stderr)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func withACertificateTheDaemonServesHTTPSOnly() async throws {
        let world = try await World.make()
        let certificate = world.directory + "/../cert.pem"
        let key = world.directory + "/../key.pem"
        let made = try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
        try #require(made.status == 0, "\(made.output)")
        let daemon = try await DaemonProcess.start(
            world,
            [
                "--host", "0.0.0.0", "--secret", secret,
                "--tls-certificate", certificate, "--tls-key", key,
            ])
        defer { daemon.process.signal(SIGKILL) }
        #expect(daemon.serve.url.hasPrefix("https://"), "\(daemon.serve.url)")
        #expect(!daemon.process.stderr.contains("over plain HTTP"), "\(daemon.process.stderr)")

        let https = try run(
            "/usr/bin/curl",
            [
                "-sS", "--cacert", certificate, "-H", "Authorization: Bearer \(secret)",
                "-w", "\n%{http_code}", "https://127.0.0.1:\(daemon.port)/api/v1/summary",
            ])
        #expect(https.status == 0 && https.output.hasSuffix("\n200"), "\(https.output)")
        let rpc = try run(
            "/usr/bin/curl",
            [
                "-sS", "--cacert", certificate, "-d",
                #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:\#(secret)"]}"#,
                "https://localhost:\(daemon.port)/jsonrpc",
            ])
        #expect(rpc.status == 0 && rpc.output.contains(#""result""#), "\(rpc.output)")

        // Plain HTTP on the same port gets no answer: the request, token and all, is not read.
        let plain = try RawSocket(port: daemon.port)
        plain.send("GET /api/v1/summary HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(secret)\r\n\r\n")
        #expect(!plain.receiveAll().contains("HTTP/1.1 200"))
        #expect(await daemon.terminate() == 0)

        // Unusable files: one line naming the file, exit 2.
        let missing = try await HaulProcess.run(
            ["serve", "--port", "0", "--tls-certificate", world.directory + "/none.pem", "--tls-key", key], in: world)
        #expect(missing.status == 2 && missing.stderr.contains("--tls-certificate"), "\(missing.stderr)")
        let alone = try await HaulProcess.run(["serve", "--port", "0", "--tls-certificate", certificate], in: world)
        #expect(alone.status == 2 && alone.stderr.contains("go together"), "\(alone.stderr)")
        try await world.close()
    }
}

enum TLSTools {
    static let available = ["/usr/bin/openssl", "/usr/bin/curl"].allSatisfy {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}
