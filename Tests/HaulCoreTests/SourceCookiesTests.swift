import Foundation
import HaulCore
import Testing

/// The cookies a download was given per URL (aria2's `load-cookies` over RPC): each URL gets the
/// jar's cookies for it and no other, the machine puts them only on requests to that URL (a
/// mirror on another host gets none), and neither printing nor storing shows a value where it
/// should not.
@Suite(.timeLimit(.minutes(1))) struct SourceCookiesTests {
    let now: Int64 = 1_800_000_000
    let primary = try! RemoteURL("https://www.example.com/docs/file")
    let sibling = try! RemoteURL("http://mirror.example.com/file")
    let stranger = try! RemoteURL("http://other.org/file")

    var jar: CookieJar {
        get throws {
            try CookieJar(
                netscapeFile: """
                    .example.com\tTRUE\t/\tFALSE\t0\tsession\ts1
                    www.example.com\tFALSE\t/docs\tTRUE\t\(now + 60)\tdocs\td1
                    www.example.com\tFALSE\t/\tFALSE\t\(now - 1)\told\tgone
                    """, file: "c.txt", now: now - 10)
        }
    }

    @Test func eachURLGetsItsOwnCookiesAtTheTimeGiven() throws {
        let cookies = SourceCookies(jar: try jar, urls: [primary, sibling, stranger], now: now)
        #expect(
            cookies.field(for: primary) == "docs=d1; session=s1",
            "host-only, path and Secure over https; the expired one left out")
        #expect(cookies.field(for: sibling) == "session=s1", "the domain cookie only")
        #expect(cookies.field(for: stranger) == nil)
        #expect(cookies.fields.count == 2)
        let later = SourceCookies(jar: try jar, urls: [primary], now: now + 60)
        #expect(later.field(for: primary) == "session=s1", "expired by then")
    }

    @Test func theFieldGoesAfterTheUsersOwnCookieAndOnlyToItsURL() throws {
        var request = try DownloadRequest(
            url: primary, destination: .directory("/tmp"), headers: ["Cookie": "mine=1", "X-A": "b"],
            mirrors: [sibling, stranger])
        request.cookies = SourceCookies(jar: try jar, urls: request.sources, now: now)
        #expect(
            request.headers(for: primary).fields == [
                .init(name: "X-A", value: "b"), .init(name: "Cookie", value: "mine=1; docs=d1; session=s1"),
            ])
        #expect(request.headers(for: stranger) == request.headers, "the user's own header goes everywhere, as -H does")
        request.headers = [:]
        #expect(request.headers(for: sibling).fields == [.init(name: "Cookie", value: "session=s1")])
        #expect(request.headers(for: stranger).fields.isEmpty)
        #expect(
            request.headers(for: try RemoteURL("http://added.later/file")).fields.isEmpty, "a URL added later gets none"
        )
    }

    /// The machine asks the first URL with its cookie and probes the mirror on another host
    /// without it.
    @Test func theMachineSendsACookieOnlyToTheSourceItBelongsTo() throws {
        let mirror = try RemoteURL("http://b.other.net/file")
        var request = try DownloadRequest(
            url: try RemoteURL("http://a.example.com/file"), destination: .directory("/tmp"),
            connections: 2, mirrors: [mirror])
        request.cookies = SourceCookies(jar: try jar, urls: request.sources, now: now)
        #expect(request.cookies.field(for: mirror) == nil)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var machine = DownloadStateMachine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 4,
                httpVersions: .http1_1))
        var plans: [RequestPlan] = []
        func collect(_ actions: [DownloadStateMachine.Action]) {
            for action in actions { if case .request(_, let plan) = action { plans.append(plan) } }
        }
        collect(machine.start(.init(partSize: nil, published: false), now: 0))
        let head = ResponseHead(
            status: 206, headers: ["Content-Range": "bytes 0-99/10000", "ETag": "\"a\""],
            url: request.url.absoluteString)
        collect(machine.responseReceived(0, head, nowSecondsSince1970: 0, jitter: 0))
        _ = machine.received(0, count: 100)
        collect(machine.bodyEnded(0, jitter: 0))
        let toPrimary = plans.filter { $0.url == request.url }
        let toMirror = plans.filter { $0.url == mirror }
        #expect(!toPrimary.isEmpty && !toMirror.isEmpty, "\(plans.map(\.url))")
        #expect(toPrimary.allSatisfy { $0.allHeaders["Cookie"] == "session=s1" })
        #expect(toMirror.allSatisfy { $0.allHeaders["Cookie"] == nil })
    }

    @Test func storedAndDecodedAsTheyWere() throws {
        let cookies = SourceCookies(jar: try jar, urls: [primary, sibling], now: now)
        #expect(try SourceCookies(storedForm: cookies.storedForm) == cookies)
        #expect(try SourceCookies(storedForm: "") == SourceCookies())
        let error = #expect(throws: HaulError.self) { try SourceCookies(storedForm: "http://a/ sid=hunter2\n") }
        #expect(error?.code == .store && error?.message.contains("hunter2") == false)

        // A request's JSON (how a fleet's PostgreSQL store keeps it) carries them; an old one without them decodes empty.
        var request = try DownloadRequest(url: primary, destination: .directory("/tmp"), mirrors: [sibling])
        request.cookies = cookies
        let decoded = try JSONDecoder().decode(DownloadRequest.self, from: JSONEncoder().encode(request))
        #expect(decoded == request && decoded.cookies == cookies)
        var object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])
        object["cookies"] = nil
        let old = try JSONDecoder().decode(DownloadRequest.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(old.cookies.isEmpty)
    }

    @Test func printingNeverShowsAValue() throws {
        var request = try DownloadRequest(url: primary, destination: .directory("/tmp"))
        request.cookies = SourceCookies(jar: try jar, urls: [primary], now: now)
        var dumped = ""
        dump(request, to: &dumped)
        for text in [
            "\(request.cookies)", String(reflecting: request.cookies), "\(request)", String(reflecting: request),
            dumped,
        ] {
            #expect(!text.contains("s1") && !text.contains("d1"), "\(text)")
        }
        #expect("\(request.cookies)" == "SourceCookies(1 URL)")
    }
}
