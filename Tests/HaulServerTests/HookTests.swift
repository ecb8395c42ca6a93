import AsyncHTTPClient
import Crypto
import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulTesting
import Logging
import NIOHTTP1
import Testing

@testable import HaulServer

/// `--on-complete`, `--on-error` and `--webhook` (issue 22): real programs (shell scripts that
/// write their arguments to a file), a real receiver (the test server, which records each
/// request's body), the signature checked here with swift-crypto's own HMAC.
@Suite(.timeLimit(.minutes(2))) struct HookTests {
    static let secret = "webhook-test-secret"

    /// A temporary directory with a script that writes its arguments, one a line, to
    /// `DIR/NAME-ID.args`, then exits with `status`.
    struct Scripts {
        let root = NSTemporaryDirectory() + "haul-hooks-\(UUID().uuidString)"

        func script(_ name: String, status: Int = 0) throws -> String {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let path = root + "/" + name + ".sh"
            // Written aside, then renamed: a reader never sees half of it.
            let script =
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '\(root)/\(name)-'\"$1\".tmp\n"
                + "mv '\(root)/\(name)-'\"$1\".tmp '\(root)/\(name)-'\"$1\".args\nexit \(status)\n"
            try script.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(chmod(path, 0o755) == 0)
            return path
        }

        func arguments(_ name: String, _ id: String) -> ArraySlice<String>? {
            (try? String(contentsOfFile: "\(root)/\(name)-\(id).args", encoding: .utf8))?.components(separatedBy: "\n")
                .dropLast()
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    /// What the receiver must do: recompute the HMAC of the exact body with the shared secret.
    func signatureIsValid(_ request: RecordedRequest) -> Bool {
        let code = HMAC<SHA256>.authenticationCode(for: request.body, using: SymmetricKey(data: Data(Self.secret.utf8)))
        let hex = code.map { String(format: "%02x", $0) }.joined()
        return request.header("X-Haul-Signature") == "sha256=" + hex
    }

    @Test func aCompletedAndAFailedDownloadRunTheirCommandsAndSendSignedEvents() async throws {
        let scripts = Scripts()
        defer { scripts.remove() }
        let server = try await TestServer.start()
        let payload = Payload(seed: 7, length: 300_000)
        server.setRoute("/file", Route(payload: payload))
        server.setRoute("/gone", Route(payload: payload, then: .status(404)))
        server.setRoute("/hook", Route(payload: payload, then: .document("ok")))

        var configuration = Daemon.Configuration(
            port: 0, home: scripts.root + "/home", downloadDirectory: scripts.root + "/downloads")
        configuration.hooks = DaemonHooks(
            onComplete: try CommandHook(try scripts.script("complete"), option: "--on-complete"),
            onError: try CommandHook(try scripts.script("error", status: 3), option: "--on-error"),
            webhook: try Webhook.Target(url: server.url("/hook"), secret: Self.secret))
        let api = try await DaemonAPI.start(configuration)

        // Neither API can change a hook: aria2's option is refused by name, the REST one too.
        let rpc = try await api.rpc("aria2.changeGlobalOption", #"{"on-download-complete": "/bin/sh"}"#)
        #expect(
            rpc.contains(#""code":1"#) && rpc.contains("on-download-complete")
                && rpc.contains("cannot be set over RPC"), "\(rpc)")
        for key in ["onComplete", "webhook"] {
            let rest = try await api.call(.PATCH, "/options", body: #"{"\#(key)": "/bin/sh", "connections": 2}"#)
            #expect(rest.status == 400 && String(decoding: rest.body, as: UTF8.self).contains("command line"))
        }
        let options = try JSONDecoder().decode(OptionsView.self, from: try await api.call(.GET, "/options").body)
        #expect(options.connections == 1, "a refused change changes nothing")

        let good = try await api.add(server.url("/file"), fileName: "good.bin")
        let bad = try await api.add(server.url("/gone"), fileName: "bad.bin")
        #expect(try await api.finished(good.id).status == .completed)
        #expect(try await api.finished(bad.id).status == .failed)

        #expect(
            try await eventually {
                scripts.arguments("complete", good.id) != nil && scripts.arguments("error", bad.id) != nil
            })
        #expect(scripts.arguments("complete", good.id) == [good.id, "1", scripts.root + "/downloads/good.bin"])
        #expect(scripts.arguments("error", bad.id) == [bad.id, "1", scripts.root + "/downloads/bad.bin"])
        #expect(scripts.arguments("complete", bad.id) == nil && scripts.arguments("error", good.id) == nil)

        #expect(try await eventually { server.requests(to: "/hook").count == 2 })
        let events = try server.requests(to: "/hook").map { request in
            #expect(request.method == "POST" && signatureIsValid(request), "\(request.headers)")
            #expect(request.header("Content-Type") == "application/json")
            return try JSONDecoder().decode(EventView.self, from: Data(request.body))
        }
        let completed = try #require(events.first { $0.id == good.id })
        #expect(completed.type == .completed && completed.status == .completed)
        #expect(completed.path == scripts.root + "/downloads/good.bin" && completed.totalLength == 300_000)
        #expect(completed.url == server.url("/file"))
        let failed = try #require(events.first { $0.id == bad.id })
        #expect(failed.type == .failed && failed.error?.code == "http-status")
        #expect(
            server.requests(to: "/hook").map { $0.header("X-Haul-Event") }.sorted { ($0 ?? "") < ($1 ?? "") } == [
                "completed", "failed",
            ])

        // A tampered body no longer matches its signature: the check above can fail.
        var tampered = try #require(server.requests(to: "/hook").first)
        tampered.body[tampered.body.count / 2] ^= 1
        #expect(!signatureIsValid(tampered))

        try await api.stop()
        try await server.shutdown()
    }

    @Test func aFailedDeliveryIsTriedAgainWithDoublingWaitsOnTheClock() async throws {
        let server = try await TestServer.start()
        let payload = Payload(seed: 1, length: 10)
        server.setRoute(
            "/hook", Route(payload: payload, script: [.status(503), .status(500), .status(429)], then: .document("ok")))
        let clock = ManualClock()
        var target = try Webhook.Target(url: server.url("/hook"), secret: Self.secret)
        target.tries = 5
        let webhook = Webhook(
            target: target, client: .shared, clock: ClockAdapter(clock), logger: Logger(label: "test"))
        let body = Data(#"{"type":"completed"}"#.utf8)
        let delivery = Task {
            await webhook.deliver(body, type: "completed", id: DownloadID(rawValue: "0123456789abcdef"))
        }
        for (index, wait) in [1, 2, 4].enumerated() {
            await clock.waitForSleepers(count: 1)
            #expect(server.requests(to: "/hook").count == index + 1)
            #expect(clock.sleepers == [clock.now.advanced(by: .seconds(wait))], "the wait after try \(index + 1)")
            clock.advance(by: .seconds(wait))
        }
        #expect(await delivery.value, "delivered at the fourth try")
        let requests = server.requests(to: "/hook")
        #expect(requests.count == 4)
        #expect(Set(requests.compactMap { $0.header("X-Haul-Delivery") }).count == 1, "one delivery id for every try")
        #expect(requests.allSatisfy { signatureIsValid($0) && $0.body == Array(body) })

        // A 4xx is an answer, not a failure: one try, not delivered.
        server.setRoute("/refuses", Route(payload: payload, then: .status(410)))
        let refusing = Webhook(
            target: try Webhook.Target(url: server.url("/refuses"), secret: Self.secret), client: .shared,
            clock: ClockAdapter(clock), logger: Logger(label: "test"))
        #expect(await !refusing.deliver(body, type: "completed", id: DownloadID(rawValue: "0123456789abcdef")))
        #expect(server.requests(to: "/refuses").count == 1)
        try await server.shutdown()
    }

    @Test func aReceiverThatIsDownGetsBoundedTriesAndTheWaitsStopAtTheLongest() async throws {
        let closed = try LoopbackPort.Refusing()
        let clock = ManualClock()
        var target = try Webhook.Target(url: "http://127.0.0.1:\(closed.port)/hook", secret: Self.secret)
        target.tries = 3
        target.longestDelay = .milliseconds(1500)
        target.timeout = .milliseconds(300) // AsyncHTTPClient tries to connect again until a try's deadline
        let webhook = Webhook(
            target: target, client: .shared, clock: ClockAdapter(clock), logger: Logger(label: "test"))
        #expect(webhook.delay(after: 1) == .seconds(1) && webhook.delay(after: 2) == .milliseconds(1500))
        let delivery = Task {
            await webhook.deliver(Data("{}".utf8), type: "failed", id: DownloadID(rawValue: "0123456789abcdef"))
        }
        for wait: Duration in [.seconds(1), .milliseconds(1500)] {
            await clock.waitForSleepers(count: 1)
            #expect(clock.sleepers == [clock.now.advanced(by: wait)])
            clock.advance(by: wait)
        }
        #expect(await !delivery.value, "three tries, then given up")
        #expect(clock.sleepers.isEmpty)
        withExtendedLifetime(closed) {}
    }

    /// Hooks never hold up the outcome stream: with nobody draining, a full queue drops its
    /// oldest; once drained, only the newest is delivered.
    @Test func aFullQueueDropsTheOldestEventAndDeliversTheNewest() async throws {
        let server = try await TestServer.start()
        server.setRoute("/hook", Route(payload: Payload(seed: 1, length: 10), then: .document("ok")))
        var hooks = DaemonHooks(webhook: try Webhook.Target(url: server.url("/hook"), secret: Self.secret))
        hooks.queueLimit = 1
        let dispatcher = HookDispatcher(hooks: hooks, clock: ClockAdapter(ManualClock()), logger: Logger(label: "test"))
        let ids = ["0000000000000001", "0000000000000002", "0000000000000003"].map { DownloadID(rawValue: $0) }
        for id in ids {
            dispatcher.note(DownloadOutcome(id: id, status: .failed, error: HaulError(.network, "refused")))
        }
        dispatcher.note(DownloadOutcome(id: ids[0], status: .paused)) // not an event for hooks
        #expect(dispatcher.dropped == 2)
        let (outcomes, end) = AsyncStream.makeStream(of: DownloadOutcome.self)
        end.finish()
        await dispatcher.observe(outcomes: outcomes)
        let delivered = server.requests(to: "/hook")
        #expect(delivered.count == 1)
        #expect(
            try JSONDecoder().decode(EventView.self, from: Data(try #require(delivered.first).body)).id
                == ids[2].rawValue)
        try await server.shutdown()
    }

    /// A failing command is logged and the next one still runs; a hung one is killed at its timeout.
    @Test func aFailingOrHungCommandDoesNotStopTheNextOne() async throws {
        let scripts = Scripts()
        defer { scripts.remove() }
        let failing = try CommandHook(try scripts.script("failing", status: 1), option: "--on-complete")
        let hangPath = scripts.root + "/hang.sh"
        try "#!/bin/sh\nexec sleep 600\n".write(toFile: hangPath, atomically: true, encoding: .utf8)
        #expect(chmod(hangPath, 0o755) == 0)
        let hung = try CommandHook(hangPath, option: "--on-complete", timeout: .milliseconds(200))
        await hung.run(id: DownloadID(rawValue: "00000000000000aa"), path: "/x", logger: Logger(label: "test"))
        var hooks = DaemonHooks(onComplete: failing)
        hooks.queueLimit = 8
        let dispatcher = HookDispatcher(hooks: hooks, clock: ClockAdapter(ManualClock()), logger: Logger(label: "test"))
        let ids = ["00000000000000b1", "00000000000000b2"].map { DownloadID(rawValue: $0) }
        let (outcomes, feed) = AsyncStream.makeStream(of: DownloadOutcome.self)
        for id in ids { feed.yield(DownloadOutcome(id: id, status: .completed)) }
        // Nothing downloaded: no hook.
        feed.yield(DownloadOutcome(id: ids[0], status: .completed, alreadyComplete: true))
        feed.finish()
        await dispatcher.observe(outcomes: outcomes)
        #expect(ids.allSatisfy { scripts.arguments("failing", $0.rawValue) == [$0.rawValue, "1", ""] })
    }

    @Test func aHookMustBeAnExecutableFileAndAWebhookNeedsASecret() throws {
        let scripts = Scripts()
        defer { scripts.remove() }
        let plain = scripts.root + "/plain.txt"
        _ = try scripts.script("unused")
        try "not a program".write(toFile: plain, atomically: true, encoding: .utf8)
        for command in [plain, scripts.root, scripts.root + "/missing", "no-such-program-anywhere", " "] {
            #expect(throws: HaulError.self) { _ = try CommandHook(command, option: "--on-complete") }
        }
        #expect(
            try CommandHook("sh", option: "--on-error", environment: ["PATH": "/nonexistent:/bin"]).executable
                == "/bin/sh")
        #expect(throws: HaulError.self) { _ = try Webhook.Target(url: "http://127.0.0.1:9/hook", secret: "") }
        for url in ["ftp://example.com/x", "example.com/hook", "http:///nohost"] {
            #expect(throws: HaulError.self) { _ = try Webhook.Target(url: url, secret: Self.secret) }
        }
    }
}
