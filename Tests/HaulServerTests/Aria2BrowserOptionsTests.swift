import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import Testing

@testable import HaulServer

/// What aria2's browser extensions send with a hand-over (`referer`, `user-agent`, `header` as
/// a list or as one text of lines, `out`), against a site that serves the file only to its
/// page's visitor: the test server answers 403 to a request without the page's Referer, the
/// browser's User-Agent or both cookies, on every hop of its redirects.
@Suite(.timeLimit(.minutes(2))) struct Aria2BrowserOptionsTests {
    let page = "https://shop.example/item?id=7"
    let agent = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"

    /// The answer's `result`, parsed.
    func result(_ answer: String) throws -> Any? {
        let object = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]
        return object?["result"]
    }

    /// Polls `tellStatus` until the download is complete or has an error; its last status.
    func ended(_ api: DaemonAPI, _ gid: String) async throws -> [String: Any] {
        var status: [String: Any] = [:]
        for _ in 0..<1_200 {
            status = try result(try await api.rpc("aria2.tellStatus", #""\#(gid)""#)) as? [String: Any] ?? [:]
            if ["complete", "error", "removed"].contains(status["status"] as? String) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return status
    }

    /// The file of a finished download, from `getFiles`.
    func path(_ api: DaemonAPI, _ gid: String) async throws -> String? {
        let files = try result(try await api.rpc("aria2.getFiles", #""\#(gid)""#)) as? [[String: Any]]
        return files?.first?["path"] as? String
    }

    @Test func aHandOverIsServedOnEveryHopOfItsRedirects() async throws {
        try await withDaemon { api, server in
            let payload = Payload(seed: 4501, length: 700_000)
            let visitor = [("Referer", page), ("User-Agent", agent), ("Cookie", "sid=s1; theme=dark")]
            // The page's origin, another origin (localhost: the same server, another host), and back.
            var start = Route(payload: payload, then: .redirect(to: "http://localhost:\(server.port)/hop"))
            start.requiredHeaders = visitor
            var hop = Route(payload: payload, then: .redirect(to: server.url("/file.bin")))
            hop.requiredHeaders = Array(visitor.prefix(2))
            var file = Route(payload: payload)
            file.requiredHeaders = visitor
            server.setRoute("/start", start)
            server.setRoute("/hop", hop)
            server.setRoute("/file.bin", file)

            let answer = try await api.rpc(
                "aria2.addUri",
                #"""
                ["\#(server.url("/start"))"], {"referer": "\#(page)", "user-agent": "\#(agent)",
                "header": "Cookie: sid=s1\r\nCookie: theme=dark\nX-Extra: 1\nX-Extra: 2\n", "out": "shop/f.bin"}
                """#)
            let gid = try #require(try result(answer) as? String, "\(answer)")
            let status = try await ended(api, gid)
            #expect(status["status"] as? String == "complete", "\(status)")
            let path = try #require(try await path(api, gid))
            #expect(path.hasSuffix("/shop/f.bin"), "\(path)")
            #expect(payload.mismatch(inFileAt: path) == nil)

            let requests = ["/start", "/hop", "/file.bin"].flatMap { server.requests(to: $0) }
            #expect(!requests.isEmpty && requests.allSatisfy { $0.header("Referer") == page })
            #expect(requests.allSatisfy { $0.header("User-Agent") == agent })
            // Repeated names stay lines of their own; the cookies stay with the URL's own origin.
            #expect(requests.allSatisfy { $0.headers.filter { $0.name == "X-Extra" }.map(\.value) == ["1", "2"] })
            let hops = server.requests(to: "/hop")
            #expect(!hops.isEmpty && hops.allSatisfy { $0.header("Cookie") == nil }, "\(hops.map(\.headers))")

            let options = try #require(
                try result(try await api.rpc("aria2.getOption", #""\#(gid)""#)) as? [String: Any])
            #expect(options["referer"] as? String == page)
            #expect(options["user-agent"] as? String == agent)
            #expect(options["header"] as? String == "Cookie: sid=s1; theme=dark\nX-Extra: 1\nX-Extra: 2\n")
        }
    }

    /// `referer: "*"`: each request names the download's own URI, which the site requires.
    @Test func aRefererOfAStarIsTheDownloadsOwnURI() async throws {
        try await withDaemon { api, server in
            let payload = Payload(seed: 4502, length: 300_000)
            var own = Route(payload: payload, then: .redirect(to: server.url("/own.bin")))
            own.requiredHeaders = [("Referer", server.url("/start"))]
            var file = Route(payload: payload)
            file.requiredHeaders = own.requiredHeaders
            server.setRoute("/start", own)
            server.setRoute("/own.bin", file)
            let answer = try await api.rpc(
                "aria2.addUri", #"["\#(server.url("/start"))"], {"referer": "*", "out": "own.bin"}"#)
            let gid = try #require(try result(answer) as? String, "\(answer)")
            let status = try await ended(api, gid)
            #expect(status["status"] as? String == "complete", "\(status)")
            let options = try #require(
                try result(try await api.rpc("aria2.getOption", #""\#(gid)""#)) as? [String: Any])
            #expect(options["referer"] as? String == "*")
        }
    }

    /// `changeOption` on a running download: its later requests carry the new fields, and its
    /// record keeps them (the run's own record is what it stores last).
    @Test func aRunningDownloadTakesANewRefererFromItsNextRequest() async throws {
        try await withDaemon { api, server in
            let payload = Payload(seed: 4503, length: 1_000_000)
            // Every answer breaks off after 100 kB: the download resumes with a new request each time.
            server.setRoute("/r.bin", Route(payload: payload, throttle: 400_000, then: .dropAfter(100_000)))
            let answer = try await api.rpc("aria2.addUri", #"["\#(server.url("/r.bin"))"], {"out": "r.bin"}"#)
            let gid = try #require(try result(answer) as? String, "\(answer)")
            #expect(try await eventually { !server.requests(to: "/r.bin").isEmpty })
            let change = try await api.rpc(
                "aria2.changeOption", #""\#(gid)", {"referer": "\#(page)", "user-agent": "\#(agent)"}"#)
            #expect(change.contains(#""result":"OK""#), "\(change)")
            let status = try await ended(api, gid)
            #expect(status["status"] as? String == "complete", "\(status)")
            let referers = server.requests(to: "/r.bin").map { $0.header("Referer") }
            // Once a request carries it, every later one does; the last ones do.
            let first = try #require(referers.firstIndex(of: page), "\(referers)")
            #expect(referers[first...].allSatisfy { $0 == page }, "\(referers)")
            #expect(server.requests(to: "/r.bin")[first...].allSatisfy { $0.header("User-Agent") == agent })
            let options = try #require(
                try result(try await api.rpc("aria2.getOption", #""\#(gid)""#)) as? [String: Any])
            #expect(options["referer"] as? String == page && options["user-agent"] as? String == agent, "\(options)")
        }
    }

    /// An `out` whose path leaves `dir` is refused, even into another directory the daemon allows.
    @Test func anOutThatLeavesDirIsRefused() throws {
        let root = "/srv/downloads"
        let defaults = DaemonDefaults(directory: root, connections: 1)
        let refused = ["../b/f.bin", "a/../../b/f.bin", "..", ".", "a/..", "sub/../../downloads2/f"]
        for out in refused {
            #expect(
                throws: Aria2Error.self, "\(out)",
                performing: {
                    try Aria2Options.addRequest(
                        uri: "http://x/f", options: ["dir": .string(root + "/a"), "out": .string(out)],
                        defaults: defaults)
                })
            do {
                _ = try Aria2Options.addRequest(
                    uri: "http://x/f", options: ["dir": .string(root + "/a"), "out": .string(out)], defaults: defaults)
            } catch let error as Aria2Error {
                #expect(error.message == "The option '--out' must stay beneath dir", "\(out)")
            }
        }
        let nested = try Aria2Options.addRequest(
            uri: "http://x/f", options: ["dir": .string(root), "out": .string("a/./b/../c/f.bin")], defaults: defaults)
        #expect(nested.directory == root + "/a/c" && nested.fileName == "f.bin")
    }

    /// The REST add's `referer` and `userAgent` win over the same names in `headers`.
    @Test func theRESTAddTakesRefererAndUserAgent() throws {
        let body = #"""
            {"url": "http://x/f", "headers": {"referer": "http://old/", "User-Agent": "old", "X-A": "b"},
             "referer": "\#(page)", "userAgent": "\#(agent)"}
            """#
        let add = try JSONDecoder().decode(AddRequest.self, from: Data(body.utf8))
        let request = try add.downloadRequest(defaultDirectory: "/srv/downloads")
        #expect(request.headers["Referer"] == page)
        #expect(request.headers["User-Agent"] == agent)
        #expect(request.headers["X-A"] == "b")
        #expect(request.headers.fields.count == 3, "\(request.headers.fields)")
    }
}
