import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// aria2's `load-cookies` over the daemon's JSON-RPC, against `haul serve` and the test server:
/// a cookie file in a download directory is read when the download is added, and each cookie
/// goes only to the host it belongs to (not to a mirror on another host, not to another
/// domain), again after the daemon is killed and restarted; a file elsewhere, or a malformed
/// one, is an RPC error and nothing is added; no value appears in what the daemon answers or
/// prints.
@Suite(.timeLimit(.minutes(3))) struct Aria2CookieTests {
    let secret = "rpc-c00kie-s3cret"

    struct Reply {
        var status: Int
        var result: Any?
        var error: String?
        var text: String
    }

    func rpc(_ daemon: DaemonProcess, _ method: String, _ params: [Any]) async throws -> Reply {
        let call: [String: Any] = [
            "jsonrpc": "2.0", "id": "1", "method": "aria2." + method,
            "params": ["token:" + daemon.serve.secret] + params,
        ]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: call), as: UTF8.self)
        let answer = try await daemon.call(.POST, "/jsonrpc", body: body)
        let object = answer.json as? [String: Any]
        return Reply(
            status: answer.status, result: object?["result"],
            error: (object?["error"] as? [String: Any])?["message"] as? String,
            text: answer.text)
    }

    func cookieFile(_ world: World, _ text: String, name: String = "cookies.txt") throws -> String {
        let path = world.directory + "/" + name
        try FileManager.default.createDirectory(atPath: world.directory, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The first URL (localhost, dead) gets no cookie, the mirror (127.0.0.1) gets its own; the
    /// cookie for another domain goes nowhere.
    @Test func aCookieGoesOnlyToTheSourceItBelongsTo() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2131, length: 600_000)
        world.server.setRoute("/gone.bin", Route(payload: payload, then: .status(404)))
        world.server.setRoute("/c.bin", Route(payload: payload))
        let path = try cookieFile(
            world,
            "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n.example.com\tTRUE\t/\tFALSE\t0\tother\t\(secret)-x\n")
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let added = try await rpc(
            daemon, "addUri",
            [
                ["http://localhost:\(world.server.port)/gone.bin", world.server.url("/c.bin")],
                ["load-cookies": path, "out": "c.bin"],
            ])
        let gid = try #require(added.result as? String, "\(added.text)")
        try await daemon.wait(for: gid, status: .completed)
        #expect(payload.mismatch(inFileAt: world.directory + "/c.bin") == nil)
        let dead = world.server.requests(to: "/gone.bin")
        let good = world.server.requests(to: "/c.bin")
        #expect(!dead.isEmpty && dead.allSatisfy { $0.header("Cookie") == nil }, "\(dead.map { $0.header("Cookie") })")
        #expect(
            !good.isEmpty && good.allSatisfy { $0.header("Cookie") == "sid=\(secret)" },
            "\(good.map { $0.header("Cookie") })")

        // Nothing the daemon answers or prints shows a value; only its private state holds it.
        for method in ["getOption", "tellStatus", "getFiles"] {
            let reply = try await rpc(daemon, method, [gid])
            #expect(reply.status == 200 && !reply.text.contains(secret), "\(method): \(reply.text)")
        }
        #expect(!(try await daemon.call(.GET, "/api/v1/downloads/\(gid)").text.contains(secret)))
        let mode = try #require(
            try FileManager.default.attributesOfItem(atPath: world.home + "/haul.sqlite")[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
        #expect(await daemon.terminate() == 0)
        #expect(!daemon.process.stderr.contains(secret) && !daemon.process.stdout.contains(secret))
        try await world.close()
    }

    /// `addMetalink` with a file whose only cookie is for another domain: nothing is sent.
    @Test func aCookieForAnotherDomainIsNotSent() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2132, length: 300_000)
        world.server.setRoute("/m.bin", Route(payload: payload))
        let path = try cookieFile(world, ".example.com\tTRUE\t/\tFALSE\t0\tsid\t\(secret)\n")
        let metalink =
            "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"m.bin\">"
                + """
                <hash \
                type=\"sha-256\">\(payload.sha256)</hash><url>\(world.server.url("/m.bin"))</url></file></metalink>
                """
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let added = try await rpc(
            daemon, "addMetalink", [Data(metalink.utf8).base64EncodedString(), ["load-cookies": path]])
        let gid = try #require((added.result as? [String])?.first, "\(added.text)")
        try await daemon.wait(for: gid, status: .completed)
        #expect(payload.mismatch(inFileAt: world.directory + "/m.bin") == nil)
        let requests = world.server.requests(to: "/m.bin")
        #expect(!requests.isEmpty && requests.allSatisfy { $0.header("Cookie") == nil })
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func aFileOutsideTheDownloadDirectoriesOrMalformedAddsNothing() async throws {
        let world = try await World.make()
        world.server.setRoute("/f.bin", Route(payload: Payload(seed: 2133, length: 1000)))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let outside = world.home + "-cookies.txt"
        try "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n".write(toFile: outside, atomically: true, encoding: .utf8)
        let malformed = try cookieFile(world, "127.0.0.1\tFALSE\t/\tFALSE\tnever\tsid\t\(secret)\n", name: "bad.txt")
        let metalink = Data(
            "<metalink><file name=\"f.bin\"><url>\(world.server.url("/f.bin"))</url></file></metalink>".utf8
        ).base64EncodedString()
        let attempts: [(String, [Any], String)] = [
            (
                "addUri", [[world.server.url("/f.bin")], ["load-cookies": outside]],
                """
                load-cookies: \(outside) is outside the daemon's download directories (\(world.directory)); the \
                daemon reads such a file only from one of them
                """
            ),
            ("addMetalink", [metalink, ["load-cookies": outside]], "load-cookies: \(outside) is outside"),
            (
                "addUri", [[world.server.url("/f.bin")], ["load-cookies": malformed]],
                "load-cookies: \(malformed), line 1: the expiry is not a number of seconds"
            ),
            (
                "addUri", [[world.server.url("/f.bin")], ["load-cookies": world.directory + "/none.txt"]],
                "load-cookies: cannot open \(world.directory)/none.txt: No such file or directory"
            ),
            (
                "changeGlobalOption", [["load-cookies": malformed]],
                "The option '--load-cookies' is read once, when a download is added"
            ),
        ]
        for (method, params, message) in attempts {
            let reply = try await rpc(daemon, method, params)
            #expect(reply.status == 400 && reply.result == nil, "\(method): \(reply.text)")
            #expect(reply.error?.hasPrefix(message) == true, "\(method): \(reply.error ?? reply.text)")
            #expect(!reply.text.contains(secret))
        }
        #expect(try await daemon.list().isEmpty)
        #expect(world.server.requests.isEmpty)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// kill -9 mid-download and a new daemon: the resumed requests carry the cookie, which
    /// the daemon kept in its state (nobody gave it again).
    @Test func aResumeAfterARestartSendsTheCookieAgain() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2134, length: 2_000_000)
        world.server.setRoute(
            "/big.bin", Route(payload: payload, throttle: 400_000, script: [.stallAfter(payload.length / 2)]))
        let path = try cookieFile(world, "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n")
        let daemon = try await DaemonProcess.start(world, ["--checkpoint-interval", "0.05"])
        defer { daemon.process.signal(SIGKILL) }
        let added = try await rpc(daemon, "addUri", [[world.server.url("/big.bin")], ["load-cookies": path]])
        let gid = try #require(added.result as? String, "\(added.text)")
        let checkpoint = try await world.waitForCheckpoint(of: gid, beyond: 0)
        await daemon.kill9()
        try FileManager.default.removeItem(atPath: path)
        let before = world.server.requests(to: "/big.bin").count
        world.server.setRoute("/big.bin", Route(payload: payload))
        let restarted = try await DaemonProcess.start(world)
        defer { restarted.process.signal(SIGKILL) }
        try await restarted.wait(for: gid, status: .completed)
        #expect(payload.mismatch(inFileAt: world.directory + "/big.bin") == nil)
        let requests = world.server.requests(to: "/big.bin")
        #expect(requests.count > before && requests[before...].contains { $0.rangeStart >= checkpoint }, "resumed")
        #expect(
            requests.allSatisfy { $0.header("Cookie") == "sid=\(secret)" }, "\(requests.map { $0.header("Cookie") })")
        #expect(await restarted.terminate() == 0)
        try await world.close()
    }
}
