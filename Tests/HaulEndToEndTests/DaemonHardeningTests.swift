import Foundation
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import NIOCore
import NIOHTTP1
import Testing

/// `haul serve` against hostile clients (issue 19): idle and slow sockets under a low
/// descriptor limit, foreign `Host` headers and `Origin`s, a WebSocket that never shows the
/// token. The real binary every time; no test asserts how long anything took.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DaemonHardeningTests {
    // MARK: Descriptors and timeouts (item 3)

    @Test func idleTokenlessConnectionsDoNotLockOutTheOwnerUnderALowDescriptorLimit() async throws {
        let world = try await World.make()
        // Both limits 256 (dash's ulimit sets both), and timeouts long enough that only the cap can help.
        let daemon = try await DaemonProcess.start(
            world, ["--header-timeout", "600", "--idle-timeout", "600"], shell: "ulimit -n 256")
        defer { daemon.process.signal(SIGKILL) }
        // A client that showed the token before the flood keeps its keep-alive connection.
        let owner = try RawSocket(port: daemon.port)
        let ask =
            "GET /api/v1/summary HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(daemon.serve.secret)\r\n\r\n"
        owner.send(ask)
        #expect(owner.receiveResponse()?.head.hasPrefix("HTTP/1.1 200") == true)
        var idle: [RawSocket] = []
        for _ in 0..<300 { idle.append(try RawSocket(port: daemon.port)) }

        let answer = try await daemon.call(.GET, "/api/v1/summary", timeout: .seconds(20))
        #expect(answer.status == 200, "\(answer.text)")
        let rpc = try await daemon.call(
            .POST, "/jsonrpc",
            body: #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:\#(daemon.serve.secret)"]}"#,
            timeout: .seconds(20))
        #expect(rpc.status == 200, "\(rpc.text)")

        // The oldest idle sockets were closed to make room (a few may still wait in the backlog).
        var closed = 0
        for _ in 0..<400 {
            closed = idle.filter(\.isClosedByPeer).count
            if closed >= 150 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(closed >= 150, "only \(closed) of 300 idle connections were closed")
        #expect(!owner.isClosedByPeer, "the owner's authenticated connection was closed to make room")
        owner.send(ask)
        #expect(owner.receiveResponse()?.head.hasPrefix("HTTP/1.1 200") == true)
        #expect(await daemon.terminate() == 0, "\(daemon.process.stderr)")
        try await world.close()
    }

    @Test func theSoftDescriptorLimitIsRaisedToTheHardLimit() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, shell: "ulimit -S -n 256")
        defer { daemon.process.signal(SIGKILL) }
        let limits = try String(
            contentsOfFile: "/proc/\(daemon.process.process.processIdentifier)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.count == 2 && numbers[0] == numbers[1] && numbers[0] > 256, "\(line)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func silentSlowHeaderAndIdleKeepAliveConnectionsAreClosed() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, ["--header-timeout", "1", "--idle-timeout", "1"])
        defer { daemon.process.signal(SIGKILL) }

        let silent = try RawSocket(port: daemon.port)
        #expect(silent.closedByPeer(within: 30), "a connection that sends nothing stays open")

        // One header byte every 100 ms, for at most 30 s: never a whole head.
        let slow = try RawSocket(port: daemon.port)
        let header =
            Array("GET /api/v1/summary HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ".utf8)
            + Array(repeating: UInt8(ascii: "a"), count: 300)
        var closed = false
        for byte in header {
            if !slow.send([byte]) || slow.isClosedByPeer {
                closed = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(closed, "a header sent a byte at a time is still being read")

        // A keep-alive connection answered once, then silent.
        let keepAlive = try RawSocket(port: daemon.port)
        keepAlive.send(
            "GET /api/v1/summary HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(daemon.serve.secret)\r\n\r\n")
        let head = keepAlive.receiveHead()
        #expect(head?.hasPrefix("HTTP/1.1 200") == true, "\(head ?? "no answer")")
        #expect(keepAlive.closedByPeer(within: 30), "an idle keep-alive connection stays open")

        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    // MARK: Host (item 6)

    @Test func requestsNamingAForeignHostAreRefused() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, ["--allow-host", "nas.example"])
        defer { daemon.process.signal(SIGKILL) }
        let port = daemon.port
        func status(_ path: String, host: String, method: String = "GET", body: String = "") throws -> (Int, String) {
            let socket = try RawSocket(port: port)
            socket.send(
                "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(daemon.serve.secret)\r\n"
                    + """
                    Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: \
                    close\r\n\r\n\(body)
                    """
            )
            let text = socket.receiveAll()
            return (Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0, text)
        }
        let rpc = #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:\#(daemon.serve.secret)"]}"#
        for host in [
            "evil.example:\(port)", "evil.example", "127.0.0.1.evil.example:\(port)", "localhost.evil.example",
            "user@127.0.0.1",
        ] {
            for (path, method, body) in [
                ("/api/v1/summary", "GET", ""), ("/", "GET", ""), ("/jsonrpc", "POST", rpc), ("/metrics", "GET", ""),
            ] {
                let (code, text) = try status(path, host: host, method: method, body: body)
                #expect(
                    code == 421 && text.contains(#""code":"misdirected-request""#),
                    "\(method) \(path) Host: \(host): \(text)")
            }
        }
        for host in [
            "127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "127.0.0.1", "[::1]:\(port)", "nas.example:\(port)",
        ] {
            let (code, text) = try status("/api/v1/summary", host: host)
            #expect(code == 200, "Host: \(host): \(text)")
            let (rpcCode, rpcText) = try status("/jsonrpc", host: host, method: "POST", body: rpc)
            #expect(rpcCode == 200, "Host: \(host): \(rpcText)")
        }
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    // MARK: aria2 WebSocket (item 4)

    /// Opens `ws://.../jsonrpc`; the response head.
    private func upgrade(_ socket: RawSocket, port: Int, origin: String?) -> String? {
        var request =
            "GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        socket.send(request + "\r\n")
        return socket.receiveHead()
    }

    @Test func aWebSocketLearnsNothingBeforeItShowsTheTokenAndForeignOriginsAreRefused() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: Payload(seed: 91, length: 10_000)))
        world.server.setRoute("/b.bin", Route(payload: Payload(seed: 92, length: 10_000)))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }

        for origin in ["http://evil.example", "http://evil.example:\(daemon.port)", "null", "http://127.0.0.1:1"] {
            let refused = try RawSocket(port: daemon.port)
            let head = upgrade(refused, port: daemon.port, origin: origin)
            #expect(head?.hasPrefix("HTTP/1.1 101") == false, "Origin \(origin): \(head ?? "")")
        }

        let socket = try RawSocket(port: daemon.port)
        let head = upgrade(socket, port: daemon.port, origin: "http://localhost:\(daemon.port)")
        #expect(head?.hasPrefix("HTTP/1.1 101") == true, "\(head ?? "no answer")")
        // A download starts and completes while the socket has not shown the token.
        let first = try await daemon.add(world.server.url("/a.bin"))
        _ = try await daemon.wait(for: first.id, status: .completed)
        #expect(
            socket.sendWebSocketText(#"{"jsonrpc":"2.0","id":"untokened","method":"aria2.tellActive","params":[]}"#))
        let refusal = socket.receiveWebSocketText() ?? ""
        #expect(
            refusal.contains("untokened") && refusal.contains("Unauthorized"),
            "the first message is not the refusal: \(refusal)")
        #expect(
            socket.sendWebSocketText(
                #"{"jsonrpc":"2.0","id":"tokened","method":"aria2.getVersion","params":["token:\#(daemon.serve.secret)"]}"#
            ))
        let reply = socket.receiveWebSocketText() ?? ""
        #expect(reply.contains("tokened") && !reply.contains("aria2.onDownload"), "\(reply)")

        // Once shown, the socket gets the notifications.
        let second = try await daemon.add(world.server.url("/b.bin"))
        var notified = false
        for _ in 0..<20 {
            guard let message = socket.receiveWebSocketText() else { break }
            if message.contains("aria2.onDownloadComplete"), message.contains(second.id) {
                notified = true
                break
            }
        }
        #expect(notified, "no onDownloadComplete for \(second.id) after the token was shown")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// Issue 32, requirement 8: aria2p's `listen_to_notifications` connects from loopback
    /// without an `Origin` and only listens. It hears every download's notifications (gids and
    /// event names) without the token; its calls still need it.
    @Test func aLoopbackListenerWithoutAnOriginHearsNotificationsButItsCallsNeedTheToken() async throws {
        let world = try await World.make()
        world.server.setRoute("/c.bin", Route(payload: Payload(seed: 93, length: 10_000)))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }

        let socket = try RawSocket(port: daemon.port)
        let head = upgrade(socket, port: daemon.port, origin: nil)
        #expect(head?.hasPrefix("HTTP/1.1 101") == true, "\(head ?? "no answer")")
        let added = try await daemon.add(world.server.url("/c.bin"))
        var heard: [String] = []
        for _ in 0..<20 {
            guard let message = socket.receiveWebSocketText() else { break }
            heard.append(message)
            if message.contains("aria2.onDownloadComplete") { break }
        }
        #expect(heard.contains { $0.contains("aria2.onDownloadStart") && $0.contains(added.id) }, "\(heard)")
        #expect(heard.contains { $0.contains("aria2.onDownloadComplete") && $0.contains(added.id) }, "\(heard)")
        #expect(!heard.contains { $0.contains(world.server.url("/c.bin")) }, "a notification named the URL: \(heard)")
        #expect(
            socket.sendWebSocketText(
                #"{"jsonrpc":"2.0","id":"untokened","method":"aria2.tellStopped","params":[0,10]}"#))
        let refusal = socket.receiveWebSocketText() ?? ""
        #expect(refusal.contains("untokened") && refusal.contains("Unauthorized"), "\(refusal)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    // MARK: Web page headers (item 5)

    @Test func theWebPageForbidsInlineScriptFramingAndSniffing() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        func get(_ path: String) throws -> (head: String, body: String) {
            let socket = try RawSocket(port: daemon.port)
            socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\nConnection: close\r\n\r\n")
            let text = socket.receiveAll()
            let parts = text.components(separatedBy: "\r\n\r\n")
            return (parts[0].lowercased(), parts.dropFirst().joined(separator: "\r\n\r\n"))
        }
        let page = try get("/")
        #expect(page.head.hasPrefix("http/1.1 200"))
        let policy =
            page.head.split(separator: "\r\n").first { $0.hasPrefix("content-security-policy:") }.map(String.init) ?? ""
        #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(policy)")
        #expect(policy.contains("frame-ancestors 'none'"), "\(policy)")
        #expect(page.head.contains("x-content-type-options: nosniff"))
        // Nothing inline for the policy to block: the script and style are their own files.
        #expect(!page.body.contains("<script>") && !page.body.contains("<style>"))
        #expect(page.body.contains(#"<script src="/haul.js""#))
        let script = try get("/haul.js")
        #expect(script.head.hasPrefix("http/1.1 200") && script.head.contains("content-type: text/javascript"))
        #expect(script.head.contains("x-content-type-options: nosniff") && script.body.contains("/api/v1/events"))
        let style = try get("/haul.css")
        #expect(style.head.hasPrefix("http/1.1 200") && style.head.contains("content-type: text/css"))
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    // MARK: Long URLs and aria2 options that name files (items 7, 8)

    @Test func aMegabyteURLIsRefusedAndAria2FileOptionsAreNotSettable() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let long = "http://example.com/" + String(repeating: "a", count: 1_000_000)
        let answer = try await daemon.call(.POST, "/api/v1/downloads", body: #"{"url": "\#(long)"}"#)
        #expect(answer.status == 400 && answer.errorCode == "bad-url", "\(answer.text.prefix(300))")
        #expect(answer.text.contains("URL too long") && answer.text.count < 400, "\(answer.text.prefix(300))")
        let token = "token:" + daemon.serve.secret
        let add = try await daemon.call(
            .POST, "/jsonrpc",
            body: #"{"jsonrpc":"2.0","id":1,"method":"aria2.addUri","params":["\#(token)",["\#(long)"]]}"#)
        #expect(add.status == 400 && add.text.contains("URL too long"), "\(add.text.prefix(300))")
        #expect(try await daemon.list().isEmpty)

        for (method, params) in [
            ("aria2.changeGlobalOption", #"["\#(token)", {"log": "/tmp/haul-rpc.log"}]"#),
            ("aria2.changeGlobalOption", #"["\#(token)", {"on-download-complete": "/bin/sh"}]"#),
            ("aria2.addUri", #"["\#(token)", ["http://x/f"], {"save-session": "/tmp/s"}]"#),
        ] {
            let reply = try await daemon.call(
                .POST, "/jsonrpc", body: #"{"jsonrpc":"2.0","id":2,"method":"\#(method)","params":\#(params)}"#)
            #expect(
                reply.status == 400 && reply.text.contains("cannot be set over RPC"),
                "\(method) \(params): \(reply.text)")
            #expect(!reply.text.contains(#""result""#))
        }
        #expect(try await daemon.list().isEmpty)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }
}
