import Foundation
import HaulCore
import Testing

/// The cookie rules with plain values: the Netscape file, RFC 6265 domain and path matching,
/// host-only cookies, `Secure`, expiry, `Set-Cookie`, and no value in anything printed.
@Suite(.timeLimit(.minutes(1))) struct CookieJarTests {
    let now: Int64 = 1_800_000_000

    func url(_ text: String) -> RemoteURL { try! RemoteURL(text) }

    var file: String {
        """
        # Netscape HTTP Cookie File
        # https://curl.se/docs/http-cookies.html

        .example.com\tTRUE\t/\tFALSE\t0\tsession\ts1
        www.example.com\tFALSE\t/docs\tFALSE\t\(now + 3600)\tdocs\td1
        #HttpOnly_.example.com\tTRUE\t/\tTRUE\t\(now + 3600)\tsecret\tx1
        example.com\tFALSE\t/\tFALSE\t\(now - 1)\told\tgone
        other.org\tFALSE\t/\tFALSE\t0\tempty\t
        """
    }

    @Test func readsANetscapeFile() throws {
        let jar = try CookieJar(netscapeFile: file, file: "c.txt", now: now)
        #expect(jar.cookies.map(\.name) == ["session", "docs", "secret", "empty"], "the expired one is dropped")
        let secret = try #require(jar.cookies.first { $0.name == "secret" })
        #expect(secret.httpOnly && secret.secure && !secret.hostOnly && secret.domain == "example.com")
        #expect(jar.cookies.first { $0.name == "session" }?.expires == nil)
        #expect(jar.cookies.first { $0.name == "docs" }?.hostOnly == true)
        #expect(jar.cookies.first { $0.name == "empty" }?.value == "")
    }

    @Test func readsAFileWithWindowsLineEnds() throws {
        let text = file.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n"
        #expect(text.split(separator: "\n").count == 1, "what a split on \"\\n\" alone saw")
        let jar = try CookieJar(netscapeFile: text, file: "c.txt", now: now)
        #expect(jar.cookies.map(\.name) == ["session", "docs", "secret", "empty"])
        #expect(jar.cookies.first { $0.name == "empty" }?.value == "")
        let error = #expect(throws: HaulError.self) {
            try CookieJar(netscapeFile: "# a\r\nexample.com\tTRUE\t/\tFALSE\tx\ta\tb\r\n", file: "c", now: now)
        }
        #expect(error?.message.hasPrefix("c, line 2: ") == true, "\(error?.message ?? "")")
    }

    @Test func sentOnlyWhereTheyBelong() throws {
        let jar = try CookieJar(netscapeFile: file, file: "c.txt", now: now)
        #expect(jar.header(for: url("http://example.com/f"), now: now) == "session=s1")
        #expect(jar.header(for: url("http://a.b.example.com/f"), now: now) == "session=s1", "a subdomain")
        #expect(
            jar.header(for: url("https://www.example.com/docs/x"), now: now) == "docs=d1; session=s1; secret=x1",
            "the longer path first; Secure over https")
        #expect(
            jar.header(for: url("http://www.example.com/docs"), now: now) == "docs=d1; session=s1",
            "no Secure over http")
        #expect(
            jar.header(for: url("http://www.example.com/docsx"), now: now) == "session=s1",
            "/docs is no prefix of /docsx")
        #expect(jar.header(for: url("http://sub.www.example.com/docs/"), now: now) == "session=s1", "host-only")
        #expect(jar.header(for: url("http://badexample.com/"), now: now) == nil)
        #expect(jar.header(for: url("http://example.com.evil.net/"), now: now) == nil)
        #expect(jar.header(for: url("http://other.org/"), now: now) == "empty=")
        // Expiry is checked when sending, too.
        #expect(jar.header(for: url("https://www.example.com/docs/x"), now: now + 7200) == "session=s1")
    }

    @Test func matchingRules() {
        #expect(Cookie.domainMatches(host: "a.example.com", domain: "example.com"))
        #expect(Cookie.domainMatches(host: "EXAMPLE.com", domain: "example.com"))
        #expect(!Cookie.domainMatches(host: "xexample.com", domain: "example.com"))
        #expect(!Cookie.domainMatches(host: "1.2.3.4", domain: "2.3.4"), "no suffix match on an IP address")
        #expect(Cookie.domainMatches(host: "1.2.3.4", domain: "1.2.3.4"))
        #expect(Cookie.pathMatches(requestPath: "/a/b", cookiePath: "/a"))
        #expect(Cookie.pathMatches(requestPath: "/a/b", cookiePath: "/a/"))
        #expect(!Cookie.pathMatches(requestPath: "/ab", cookiePath: "/a"))
        #expect(!Cookie.pathMatches(requestPath: "/", cookiePath: "/a"))
        #expect(Cookie.defaultPath(of: "/a/b/c.iso") == "/a/b")
        #expect(Cookie.defaultPath(of: "/c.iso") == "/")
        #expect(Cookie.defaultPath(of: "/") == "/")
    }

    @Test func malformedLinesNameTheFileAndLine() {
        let cases = [
            "# ok\nexample.com\tFALSE\t/\tFALSE\t0\tname\n\nexample.com FALSE / FALSE 0 a b\n": 4,
            "example.com\tMAYBE\t/\tFALSE\t0\ta\tb": 1,
            "example.com\tTRUE\t/\tFALSE\tsoon\ta\tb": 1,
            "x\tTRUE\t/\tFALSE\t0\ta\tb\n\tTRUE\t/\tFALSE\t0\ta\tb": 2,
            "example.com\tTRUE\t/\tyes\t0\ta\tb": 1,
            // A carriage return inside a value would reach a request's Cookie field.
            "# ok\nexample.com\tTRUE\t/\tFALSE\t0\ta\tb\rX-Injected: 1\n": 2,
        ]
        for (text, line) in cases {
            let error = #expect(throws: HaulError.self) {
                try CookieJar(netscapeFile: text, file: "/tmp/c.txt", now: now)
            }
            #expect(error?.code == .badCookieFile)
            #expect(error?.message.hasPrefix("/tmp/c.txt, line \(line): ") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("\n") == false)
        }
        // A value is never quoted in the error.
        let error = #expect(throws: HaulError.self) {
            try CookieJar(netscapeFile: "example.com\tTRUE\t/\tFALSE\tx\tsid\thunter2", file: "c", now: now)
        }
        #expect(error?.message.contains("hunter2") == false)
    }

    @Test func setCookieRules() {
        var jar = CookieJar()
        var taken: Bool
        let page = url("http://www.example.com/login/form")
        taken = jar.receive(setCookie: "sid=abc; Path=/; HttpOnly", from: page, now: now)
        #expect(taken)
        taken = jar.receive(setCookie: "pref=1", from: page, now: now)
        #expect(taken, "default path /login")
        taken = jar.receive(setCookie: "wide=w; Domain=.example.com; Path=/; Max-Age=60", from: page, now: now)
        #expect(taken)
        taken = jar.receive(setCookie: "evil=1; Domain=other.org", from: page, now: now)
        #expect(!taken, "not the host's domain")
        taken = jar.receive(setCookie: "tld=1; Domain=com", from: page, now: now)
        #expect(!taken, "a bare top-level label")
        taken = jar.receive(setCookie: "sec=1; Secure", from: page, now: now)
        #expect(!taken, "Secure over plain http")
        taken = jar.receive(setCookie: "noequals", from: page, now: now)
        #expect(!taken)
        taken = jar.receive(setCookie: "=v", from: page, now: now)
        #expect(!taken)
        taken = jar.receive(setCookie: "dated=d; Expires=Wed, 21-Oct-2015 07:28:00 GMT", from: page, now: now)
        #expect(
            taken,
            "taken, and expired at once")
        #expect(jar.cookies.map(\.name) == ["sid", "pref", "wide"])
        #expect(jar.header(for: url("http://www.example.com/login/x"), now: now) == "pref=1; sid=abc; wide=w")
        #expect(jar.header(for: url("http://www.example.com/f"), now: now) == "sid=abc; wide=w")
        #expect(jar.header(for: url("http://cdn.example.com/f"), now: now) == "wide=w", "only the Domain cookie")
        #expect(jar.header(for: url("http://cdn.example.com/f"), now: now + 61) == nil, "Max-Age ran out")
        // The same name, domain and path replaces; an expired one removes.
        taken = jar.receive(setCookie: "sid=new; Path=/", from: page, now: now)
        #expect(taken)
        #expect(jar.header(for: url("http://www.example.com/f"), now: now) == "sid=new; wide=w")
        taken = jar.receive(setCookie: "sid=; Path=/; Max-Age=0", from: page, now: now)
        #expect(taken)
        #expect(jar.header(for: url("http://www.example.com/f"), now: now) == "wide=w")
        taken = jar.receive(setCookie: "sec=1; Secure", from: url("https://www.example.com/"), now: now)
        #expect(taken)
        #expect(
            CookieJar.parse(setCookie: "d=1; Expires=Sun, 06 Nov 2044 08:49:37 GMT", from: page, now: now)?.expires
                == 2_362_034_977)
    }

    /// A hostile server's Max-Age past Int64 once added to now must not trap: it is a cookie
    /// that lasts as long as a cookie can.
    @Test func aHugeMaxAgeLastsForeverInsteadOfOverflowing() {
        let page = url("http://www.example.com/")
        let cookie = CookieJar.parse(setCookie: "k=v; Max-Age=9223372036854775807", from: page, now: now)
        #expect(cookie?.expires == Int64.max)
        #expect(cookie?.isExpired(now: now) == false)
    }

    @Test func writesAFileItReadsBack() throws {
        var jar = try CookieJar(netscapeFile: file, file: "c.txt", now: now)
        jar.receive(setCookie: "got=g; Path=/dl", from: url("http://127.0.0.1:8080/dl/f"), now: now)
        let text = jar.netscapeFile(now: now)
        #expect(text.hasPrefix("# Netscape HTTP Cookie File\n"))
        #expect(text.contains("127.0.0.1\tFALSE\t/dl\tFALSE\t0\tgot\tg\n"))
        #expect(text.contains("#HttpOnly_.example.com\tTRUE\t/\tTRUE\t\(now + 3600)\tsecret\tx1\n"))
        let again = try CookieJar(netscapeFile: text, file: "saved", now: now)
        #expect(again == jar)
    }

    @Test func printingNeverShowsTheValue() throws {
        let jar = try CookieJar(netscapeFile: file, file: "c.txt", now: now)
        var dumped = ""
        dump(jar, to: &dumped)
        for text in ["\(jar)", String(reflecting: jar), "\(jar.cookies)", String(reflecting: jar.cookies), dumped] {
            #expect(!text.contains("x1") && !text.contains("d1") && !text.contains("s1"), "\(text)")
        }
    }
}
