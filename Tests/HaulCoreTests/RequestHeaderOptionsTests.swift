import HaulCore
import Testing

/// The decisions behind a browser's hand-over (aria2's `header`, `referer`, `user-agent`, `out`;
/// the REST add's `referer` and `userAgent`), without a daemon.
@Suite(.timeLimit(.minutes(1))) struct RequestHeaderOptionsTests {
    @Test func headerIsAListOrOneTextOfLines() {
        #expect(RequestHeaderOptions.lines(["A: 1\nB: 2", "C: 3"]) == ["A: 1", "B: 2", "C: 3"])
        #expect(
            RequestHeaderOptions.lines(["A: 1\r\nB: 2\r\n", "\n  \n", "C: 3\n"]) == ["A: 1", "B: 2", "C: 3"],
            "CRLF, a trailing break and blank lines")
        #expect(RequestHeaderOptions.lines([]).isEmpty)
    }

    @Test func repeatedNamesStayLinesButCookiesJoin() throws {
        let list = try RequestHeaderOptions.fields([
            "Cookie: sid=1", "X-A: 1", "cookie: theme=dark", "X-A: 2", "Accept: */*", "COOKIE: c=3",
        ])
        #expect(list.fields.map(\.name) == ["X-A", "X-A", "Accept", "Cookie"])
        #expect(list.fields.filter { $0.name == "X-A" }.map(\.value) == ["1", "2"])
        #expect(list["Cookie"] == "sid=1; theme=dark; c=3")
        #expect(try RequestHeaderOptions.fields(["Cookie: a=1"])["Cookie"] == "a=1")
    }

    @Test func aLineThatIsNoFieldIsRefused() {
        for line in ["no colon", ": value", "Na me: v", "X: a\u{0}b", "X\u{1}: v"] {
            #expect(throws: HaulError.self, "\(line)") { try RequestHeaderOptions.fields([line]) }
        }
        #expect(throws: Never.self) { try RequestHeaderOptions.fields(["X: a\tb"]) }
    }

    @Test func refererAndUserAgentWinOverLinesAndEmptyRemoves() throws {
        let lines: HTTPHeaderList = ["referer": "http://old/", "User-Agent": "old", "X": "1"]
        let both = try RequestHeaderOptions.applying(referer: " http://page/ ", userAgent: "Browser/1", to: lines)
        #expect(both.fields.filter { $0.name.lowercased() == "referer" }.map(\.value) == ["http://page/"])
        #expect(both["User-Agent"] == "Browser/1" && both["X"] == "1" && both.fields.count == 3)
        let untouched = try RequestHeaderOptions.applying(referer: nil, userAgent: nil, to: lines)
        #expect(untouched == lines)
        let removed = try RequestHeaderOptions.applying(referer: "", userAgent: nil, to: lines)
        #expect(removed["Referer"] == nil && removed["User-Agent"] == "old")
        #expect(throws: HaulError.self) {
            try RequestHeaderOptions.applying(referer: "http://a/\r\nX-Evil: 1", userAgent: nil, to: lines)
        }
        #expect(throws: HaulError.self) {
            try RequestHeaderOptions.applying(referer: nil, userAgent: "a\nb", to: lines)
        }
    }

    @Test func aStarRefererIsTheURLEachRequestGoesTo() throws {
        let first = try RemoteURL("http://user:pw@a.example/f?x=1")
        let mirror = try RemoteURL("http://b.example/f")
        let request = try DownloadRequest(
            url: first, destination: .directory("/tmp"), headers: ["Referer": "*", "X": "1"], mirrors: [mirror])
        #expect(request.headers(for: first)["Referer"] == "http://a.example/f?x=1", "no credentials in it")
        #expect(request.headers(for: mirror)["Referer"] == "http://b.example/f")
        #expect(request.headers["Referer"] == "*", "stored as given")
        let named = try DownloadRequest(url: first, destination: .directory("/tmp"), headers: ["Referer": "http://p/"])
        #expect(named.headers(for: mirror)["Referer"] == "http://p/")
    }

    /// `Paths.place` as a pair that compares.
    func place(_ out: String, _ directory: String) -> [String]? {
        Paths.place(out, beneath: directory).map { [$0.directory, $0.name] }
    }

    @Test func outStaysBeneathDir() {
        #expect(place("f.bin", "/dl") == ["/dl", "f.bin"])
        #expect(place("a/./b/../c/f", "/dl/") == ["/dl/a/c", "f"])
        #expect(place("../dl/f", "/dl") == ["/dl", "f"], "out and back in")
        for out in ["..", ".", "a/..", "../f", "a/../../f", "../dlx/f", "../../etc/passwd"] {
            #expect(place(out, "/dl") == nil, "\(out)")
        }
    }
}
