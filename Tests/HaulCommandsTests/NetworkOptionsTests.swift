import ArgumentParser
import Foundation
import HaulCore
import Testing

@testable import HaulCommands

@Suite(.timeLimit(.minutes(1))) struct NetworkOptionsTests {
    @Test func credentialsPrecedenceAndNetrcErrors() throws {
        let dir = NSTemporaryDirectory() + "netrc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let netrcPath = dir + "/n"
        try "machine h login nl password np\nmachine o login ou password op\nmachine ::1 login v6 password p6"
            .write(toFile: netrcPath, atomically: true, encoding: .utf8)
        var o = try NetworkOptions.parse(["--netrc-file", netrcPath])
        var sources = try o.credentialSources()
        #expect(sources.credentials(for: try RemoteURL("http://h/x")) == Credentials(user: "nl", password: "np"))
        #expect(sources.credentials(for: try RemoteURL("http://u:p@h/x")) == Credentials(user: "u", password: "p"))
        #expect(sources.credentials(for: try RemoteURL("http://ou@o/x")) == Credentials(user: "ou", password: "op"))
        #expect(sources.credentials(for: try RemoteURL("http://z/x")) == nil)
        // An IPv6 host is looked up without its brackets, with or without a user in the URL.
        #expect(
            sources.credentials(for: try RemoteURL("http://[::1]:8080/x")) == Credentials(user: "v6", password: "p6"))
        #expect(sources.credentials(for: try RemoteURL("http://v6@[::1]/x")) == Credentials(user: "v6", password: "p6"))
        o = try NetworkOptions.parse(["--netrc-file", netrcPath, "-u", "cu:cp"])
        sources = try o.credentialSources()
        #expect(sources.credentials(for: try RemoteURL("http://h/x")) == Credentials(user: "cu", password: "cp"))
        o = try NetworkOptions.parse(["--netrc-file", dir + "/missing"])
        let e = #expect(throws: HaulError.self) { try o.credentialSources() }
        #expect(e?.code == .usage)
        #expect(throws: (any Error).self) { try NetworkOptions.parse(["--user", "nopass"]) }
        #expect(throws: (any Error).self) { try NetworkOptions.parse(["--no-netrc", "--netrc-file", "x"]) }
        o = try NetworkOptions.parse(["--no-netrc", "--user-agent", "ua/1", "--proxy", "p:3", "--noproxy", "a.b"])
        #expect(o.userAgent == "ua/1")
        let s = try o.proxySettings(environment: ["http_proxy": "http://e:1"])
        #expect(s.proxy(for: try RemoteURL("http://x/")) == ProxyEndpoint(host: "p", port: 3))
        #expect(s.proxy(for: try RemoteURL("http://c.a.b/")) == nil)
    }

    /// curl's spellings; together they are a usage error, not a silent choice of one.
    @Test func httpVersionFlags() throws {
        #expect(try HTTPVersionOptions.parse([]).policy == .automatic)
        #expect(try HTTPVersionOptions.parse(["--http1.1"]).policy == .http1_1)
        #expect(try HTTPVersionOptions.parse(["--http2"]).policy == .http2)
        #expect(throws: (any Error).self) { try HTTPVersionOptions.parse(["--http1.1", "--http2"]) }
        do {
            _ = try HTTPVersionOptions.parse(["--http2", "--http1.1"])
            Issue.record("both flags were accepted")
        } catch {
            #expect(HTTPVersionOptions.message(for: error) == "--http1.1 and --http2 exclude each other")
        }
    }
}
