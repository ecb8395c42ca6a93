import Foundation
import HaulAPI
import HaulCore
import Hummingbird
import Testing

@testable import HaulServer

/// What the daemon refuses before the manager sees it, and how each refusal reaches the client.
@Suite(.timeLimit(.minutes(1))) struct RequestValidationTests {
    /// A directory as the daemon checks and stores it: absolute, no empty, `.` or `..` part, no
    /// trailing slash; a path that is so already comes back as it is.
    @Test(arguments: [
        ("/", "/"), ("/a", "/a"), ("/a/b.c", "/a/b.c"), ("/a/.b/..c/c.", "/a/.b/..c/c."), ("/a/", "/a"), ("//a", "/a"),
        ("/a//b", "/a/b"), ("/a/./b", "/a/b"), ("/a/../b", "/b"), ("/..", "/"), ("/a/b/..", "/a"), ("/a/.", "/a"),
        ("a/b", "/a/b"), ("", "/"), ("/a/b/../../..", "/"),
    ])
    func directoriesAreNormalized(path: String, expected: String) {
        #expect(AddRequest.normalized(path) == expected)
    }

    @Test(arguments: [
        (HaulError.Code.badRequest, 400), (.usage, 400), (.badURL, 400), (.forbidden, 403),
        (.notFound, 404), (.conflict, 409), (.fileExists, 409), (.tooLarge, 413), (.store, 500), (.internal, 500),
    ])
    func everyErrorCodeHasItsStatus(code: HaulError.Code, status: Int) {
        let answer = APIErrorMiddleware<BasicRequestContext>.answer(for: HaulError(code, "x"))
        #expect(answer.status.code == status && answer.view.code == code.rawValue)
    }

    /// The daemon's own errors (the token, the Host) keep their codes and statuses, Hummingbird's
    /// 401 among them.
    @Test func theDaemonsOwnErrorsHaveTheirCodesAndStatuses() {
        typealias Middleware = APIErrorMiddleware<BasicRequestContext>
        let refused = Middleware.answer(for: DaemonError(.unauthorized, "wrong token"))
        #expect(
            refused.status == .unauthorized && refused.view == ErrorView(code: "unauthorized", message: "wrong token"))
        let misdirected = Middleware.answer(for: DaemonError(.misdirected, "Host 'evil'"))
        #expect(misdirected.status.code == 421 && misdirected.view.code == "misdirected-request")
        let hummingbird = Middleware.answer(for: HTTPError(.unauthorized, message: "no"))
        #expect(hummingbird.status == .unauthorized && hummingbird.view.code == "unauthorized")
    }

    /// Every code, the engine's and the daemon's, comes back from the wire as the error it was:
    /// what the CLI's exit status is read from. A code this haul does not know reads as internal.
    @Test func everyCodeComesBackFromTheWireAsTheErrorItWas() throws {
        for code in HaulError.Code.allCases {
            let back = ErrorView(HaulError(code, "m")).error(httpStatus: 500)
            #expect((back as? HaulError)?.code == code, "\(code)")
        }
        for code in DaemonError.Code.allCases {
            let back = ErrorView(DaemonError(code, "m")).error(httpStatus: 401)
            #expect((back as? DaemonError)?.code == code, "\(code)")
        }
        let newer = try #require(ErrorView(code: "from-a-newer-haul", message: "m").error() as? HaulError)
        #expect(newer.code == .internal && newer.message == "m")
        // So does a stored error's code.
        let stored = try JSONDecoder().decode(
            HaulError.self, from: Data(#"{"code":"from-a-newer-haul","message":"m"}"#.utf8))
        #expect(stored.code == .internal && stored.message == "m")
    }

    @Test func decodingErrorsNameTheField() throws {
        func message(_ json: String) -> String {
            do {
                _ = try JSONDecoder().decode(AddRequest.self, from: Data(json.utf8))
                return "decoded"
            } catch {
                return APIErrorMiddleware<BasicRequestContext>.haulError(for: error).message
            }
        }
        #expect(message(#"{"url": 5}"#) == "invalid JSON: url: expected a string")
        #expect(message(#"{"directory": "/d"}"#) == "invalid JSON: missing field url")
        #expect(message(#"{"url": "http://x/", "priority": "high"}"#) == "invalid JSON: priority: expected an integer")
        #expect(message("{not json") == "invalid JSON: the body is not valid JSON")
    }

    @Test(arguments: [
        (#"{"url": "http://x/f", "headers": {"X-A\r\nInjected": "1"}}"#, "header"),
        (#"{"url": "http://x/f", "headers": {"X-A": "1\u0000"}}"#, "header"),
        (#"{"url": "http://x/f", "headers": {"Bad Name": "1"}}"#, "header"),
        (#"{"url": "http://x/f", "fileName": "../etc/passwd"}"#, "fileName"),
        (#"{"url": "http://x/f", "fileName": "a/b"}"#, "fileName"),
        (#"{"url": "http://x/f", "fileName": ".."}"#, "fileName"),
        (#"{"url": "http://x/f", "fileName": "a\u001b[31m"}"#, "control character"),
        (#"{"url": "http://x/f", "directory": "relative/dir"}"#, "absolute"),
        (#"{"url": "http://x/f", "connections": 65}"#, "connections"),
        (#"{"url": "http://x/f", "connections": 0}"#, "connections"),
        (#"{"url": "http://x/f", "maxBytesPerSecond": 0}"#, "maxBytesPerSecond"),
        (#"{"url": "ftp://x/f"}"#, "ftp"),
        (#"{"url": "http://x/f", "checksum": "sha-256=zz"}"#, "sha-256"),
    ])
    func badAddsAreRefusedNamingTheField(json: String, mentions: String) throws {
        let add = try JSONDecoder().decode(AddRequest.self, from: Data(json.utf8))
        let defaults = DaemonDefaults(directory: "/srv/downloads", connections: 1)
        #expect {
            _ = try defaults.request(for: add)
        } throws: { error in
            (error as? HaulError).map { $0.message.contains(mentions) } ?? false
        }
    }

    /// The client's own `fileName` is kept as given, a dot file too (as aria2's `out` and curl's
    /// `-o` take `.env`).
    @Test func aClientsOwnNameIsKeptAsGiven() throws {
        let defaults = DaemonDefaults(directory: "/srv/downloads", connections: 1)
        for name in [".env", "..hidden", " spaced. "] {
            #expect(try defaults.request(for: AddRequest(url: "http://x/f", fileName: name)).fileName == name)
        }
    }

    /// A name of content its source refuses (a gated repository without a token: 401) is the
    /// daemon's `forbidden` (REST 403), never a 401 a client reads as its own token refused.
    @Test func aSourcesRefusalIsForbidden() {
        for status in [401, 403] {
            let refused = DaemonDefaults.refused(HaulError(.httpStatus, "hf://o/r is gated", httpStatus: status))
            #expect(refused.code == .forbidden && refused.message == "hf://o/r is gated")
        }
        #expect(DaemonDefaults.refused(HaulError(.httpStatus, "no such", httpStatus: 404)).code == .httpStatus)
    }

    @Test func defaultsFillWhatAnAddLeavesOut() throws {
        let defaults = DaemonDefaults(directory: "/srv/downloads/", connections: 4, maxBytesPerSecond: 1000)
        let request = try defaults.request(
            for: AddRequest(url: "http://x/f", directory: "/srv/downloads/./sub//deeper/../"))
        #expect(request.directory == "/srv/downloads/sub")
        #expect(request.connections == 4 && request.maxBytesPerSecond == 1000)
    }

    @Test func directoriesOutsideTheDaemonsAreForbidden() throws {
        let root = NSTemporaryDirectory() + "haul-policy-\(UUID().uuidString)"
        let allowed = root + "/downloads"
        let extra = root + "/extra"
        try FileManager.default.createDirectory(atPath: allowed, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: extra, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A link inside the allowed directory that leads out of it.
        try FileManager.default.createSymbolicLink(atPath: allowed + "/escape", withDestinationPath: "/etc")
        let policy = DirectoryPolicy(roots: [allowed, extra])
        for inside in [allowed, allowed + "/", allowed + "/new/sub", extra + "/x", allowed + "/a/../b"] {
            #expect(throws: Never.self, "\(inside)") { try policy.check(inside) }
        }
        for outside in [
            "/etc", "/", root, allowed + "-evil", allowed + "/../extra-not", allowed + "/../../etc",
            allowed + "/escape",
            allowed + "/escape/cron.d",
        ] {
            #expect(throws: HaulError.self, "\(outside)") { try policy.check(outside) }
            do {
                try policy.check(outside)
            } catch {
                #expect(error.code == .forbidden && error.message.contains("--allow-dir"))
            }
        }
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.1.2.3", true), ("localhost", true), ("::1", true), ("[::1]", true),
        ("127.example.com", false), ("0.0.0.0", false), ("::", false), ("10.0.0.1", false), ("::ffff:127.0.0.1", false),
        ("example.com", false),
    ])
    func loopbackIsJudgedByAddress(host: String, loopback: Bool) {
        #expect(Daemon.isLoopback(host) == loopback)
    }
}
