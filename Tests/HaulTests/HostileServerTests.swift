import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// Issue 19 (items 10 to 14): the real engine against the test server reproducing each hostile
/// server. Each test failed before its fix (an endless loop ends by the suite's time limit).
@Suite(.timeLimit(.minutes(1))) struct HostileServerTests {
    let payload = Payload(seed: 19, length: 100_000)

    /// A manager on an in-memory store with quick retries and `retry`'s other rules.
    func withManager(_ retry: RetryPolicy, _ body: (DownloadManager, TestServer, String) async throws -> Void)
        async throws
    {
        let root = NSTemporaryDirectory() + "haul-hostile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let configuration = DownloadManager.Configuration(
            stateDirectory: root, checkpointInterval: .milliseconds(20), progressInterval: .milliseconds(20),
            retry: retry,
            // No test here waits for a timeout; 60 s, so that a suite starved on a loaded machine
            // (628 tests on 2 cores) is not taken for a silent server.
            http: .init(connectTimeout: .seconds(30), readTimeout: .seconds(60)))
        let transport = AsyncHTTPTransport(configuration: configuration.http)
        let manager = try await DownloadManager(
            configuration: configuration, store: InMemoryDownloadStore(), transport: transport,
            clock: ClockAdapter(ContinuousClock())
        ).started()
        var failure: (any Error)?
        do { try await body(manager, server, root) } catch { failure = error }
        await manager.shutdown()
        await transport.shutdown()
        try await server.shutdown()
        try FileManager.default.removeItem(atPath: root)
        if let failure { throw failure }
    }

    func quick(attempts: Int) -> RetryPolicy {
        RetryPolicy(maxAttempts: attempts, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
    }

    func request(_ server: TestServer, _ path: String, into directory: String, connections: Int = 1) throws
        -> DownloadRequest
    {
        try DownloadRequest(
            url: RemoteURL(server.url(path)), destination: .directory(directory), connections: connections)
    }

    // MARK: 10. Broken framing: fails after the retries, with the protocol's code and words

    /// AsyncHTTPClient drops body bytes it had buffered when the error arrives, so how many
    /// bytes a try keeps varies; the messages are checked without their counts.
    static let framings: [(String, Fault, HaulError.Code, String, String)] = [
        (
            "lying-length", .lyingContentLength(extra: 50_000), .badResponse,
            "the server closed the connection after ", " of the 150000 bytes its Content-Length announced"
        ),
        (
            "zz", .brokenChunks(.badSize("zz", after: 30_000)), .brokenFraming,
            "the server broke chunked encoding: a chunk size that is not a hexadecimal number or is too large, after ",
            " bytes"
        ),
        (
            "no-last-chunk", .brokenChunks(.noLastChunk), .badResponse,
            "the server closed the connection after ", " bytes, inside its chunked body (no last chunk)"
        ),
        (
            "huge-chunk", .brokenChunks(.badSize("7fffffffffffffff", after: 0)), .badResponse,
            "the server closed the connection after ", " bytes, inside its chunked body (no last chunk)"
        ),
    ]

    /// The server ignores Range, so every try starts from byte 0 and breaks: only bytes past the
    /// furthest kept before are progress, so the tries run out (before the fix: forever, every
    /// try "attempt 1"). Broken chunk framing is never excused: exactly three tries.
    @Test(arguments: 0..<4) func brokenFramingFailsAfterTheRetries(_ index: Int) async throws {
        let (name, fault, code, prefix, suffix) = Self.framings[index]
        try await withManager(quick(attempts: 3)) { manager, server, directory in
            server.setRoute("/\(name)", Route(payload: payload, acceptsRanges: false, then: fault))
            let record = try await manager.add(request(server, "/\(name)", into: directory))
            let outcome = try await manager.outcome(of: record.id)
            let error = try #require(outcome.failure, "\(outcome)")
            #expect(error.code == code)
            #expect(error.message.hasPrefix("\(server.url("/\(name)")): \(prefix)"), "\(error.message)")
            #expect(error.message.hasSuffix(suffix), "\(error.message)")
            let tries = server.requests(to: "/\(name)").count
            #expect(code == .brokenFraming ? tries == 3 : tries >= 3, "\(tries) tries")
        }
    }

    /// On a server that honours Range, a chunk size that is not a number still fails the
    /// download after three tries, whatever bytes came before each break.
    @Test func brokenChunksAreNotExcusedByNewBytes() async throws {
        try await withManager(quick(attempts: 3)) { manager, server, directory in
            server.setRoute("/zz", Route(payload: payload, then: .brokenChunks(.badSize("zz", after: 1_000))))
            let record = try await manager.add(request(server, "/zz", into: directory))
            let outcome = try await manager.outcome(of: record.id)
            #expect(outcome.failure?.code == .brokenFraming)
            #expect(server.requests(to: "/zz").count == 3)
        }
    }

    // MARK: 11. Retry-After beyond the longest wait

    @Test func aLongRetryAfterFailsAtOnceNamingTheTime() async throws {
        var retry = quick(attempts: 5)
        retry.waitsForLongRetryAfter = false
        try await withManager(retry) { manager, server, directory in
            server.setRoute("/busy", Route(payload: payload, then: .status(503, headers: [("Retry-After", "999999")])))
            let record = try await manager.add(request(server, "/busy", into: directory))
            let outcome = try await manager.outcome(of: record.id)
            let error = try #require(outcome.failure)
            #expect(error.httpStatus == 503)
            #expect(
                error.message.hasPrefix(
                    "\(server.url("/busy")): HTTP 503: the server asks to be tried again in 999999 s (at "))
            #expect(error.message.hasSuffix("), longer than the 60 s haul waits"))
            #expect(server.requests(to: "/busy").count == 1)
        }
    }

    /// The daemon's default: the download keeps running, and its record says until when.
    @Test func aLongRetryAfterIsWaitedForVisibly() async throws {
        try await withManager(quick(attempts: 5)) { manager, server, directory in
            server.setRoute("/busy", Route(payload: payload, then: .status(503, headers: [("Retry-After", "999999")])))
            let events = manager.events()
            let record = try await manager.add(request(server, "/busy", into: directory))
            // The run stores the wait in its record, then tells its retry.
            for await event in events where event.id == record.id {
                if case .retrying = event.kind { break }
            }
            let stored = try await manager.record(record.id)
            #expect(stored?.status == .running)
            #expect(
                stored?.error?.message.contains("waiting: the server asks to be tried again in 999999 s (at ") == true)
            try await manager.pause(record.id)
            let outcome = try await manager.outcome(of: record.id)
            #expect(outcome.status == .paused)
            #expect(server.requests(to: "/busy").count == 1)
        }
    }

    // MARK: 12. A body that drips

    @Test func aDripEndsAfterTheRetries() async throws {
        var retry = quick(attempts: 2)
        retry.speedLimit = 10_000
        retry.speedTime = .milliseconds(300)
        try await withManager(retry) { manager, server, directory in
            server.setRoute("/drip", Route(payload: payload, throttle: 500))
            let record = try await manager.add(request(server, "/drip", into: directory))
            let outcome = try await manager.outcome(of: record.id)
            let error = try #require(outcome.failure)
            #expect(error.code == .network)
            #expect(error.message.hasPrefix("\(server.url("/drip")): too slow: "))
            #expect(error.message.hasSuffix(" bytes/s, under the 10000 bytes/s allowed, for 0.3 s"))
            #expect(server.requests(to: "/drip").count == 2, "the drip's bytes do not reset the count")
        }
    }

    // MARK: 13. Credentials in a redirect's userinfo

    @Test func userinfoInALocationIsNeverSent() async throws {
        let other = try await TestServer.start()
        other.setRoute("/file", Route(payload: payload))
        try await withManager(quick(attempts: 1)) { manager, server, directory in
            let target = other.url("/file").replacingOccurrences(of: "://", with: "://mallory:stolen@")
            server.setRoute("/away", Route(payload: payload, then: .redirect(to: target)))
            server.setRoute(
                "/here",
                Route(
                    payload: payload,
                    then: .redirect(to: server.url("/file").replacingOccurrences(of: "://", with: "://eve:pw@"))))
            server.setRoute("/file", Route(payload: payload))
            for path in ["/away", "/here"] {
                let record = try await manager.add(
                    try DownloadRequest(
                        url: RemoteURL(server.url(path)),
                        destination: .file(directory + path + ".bin")))
                #expect(try await manager.outcome(of: record.id).status == .completed)
            }
            #expect(other.requests(to: "/file").count == 1)
            #expect(other.requests(to: "/file").first?.header("Authorization") == nil)
            #expect(server.requests(to: "/file").first?.header("Authorization") == nil)
            #expect(payload.mismatch(inFileAt: directory + "/away.bin") == nil)
        }
        try await other.shutdown()
    }

    // MARK: 14. A name longer than a file system allows

    @Test func aVeryLongContentDispositionNameIsShortened() async throws {
        try await withManager(quick(attempts: 1)) { manager, server, directory in
            let long = String(repeating: "x", count: 5_000) + ".iso"
            server.setRoute("/long", Route(payload: payload, contentDisposition: "attachment; filename=\"\(long)\""))
            let record = try await manager.add(request(server, "/long", into: directory))
            let outcome = try await manager.outcome(of: record.id)
            #expect(outcome.status == .completed, "\(String(describing: outcome.failure))")
            let name = try #require(try await manager.record(record.id)?.fileName)
            #expect(name.utf8.count == 250 && name.hasSuffix(".iso"))
            #expect(payload.mismatch(inFileAt: directory + "/" + name) == nil)
        }
    }
}
