import Foundation
@testable import HaulCommands
import HaulCore
import Testing

@Suite(.timeLimit(.minutes(1))) struct NetworkOptionsTests {
    @Test func credentialsPrecedenceAndNetrcErrors() throws {
        let dir = NSTemporaryDirectory() + "netrc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let netrcPath = dir + "/n"
        try "machine h login nl password np\nmachine o login ou password op".write(toFile: netrcPath, atomically: true, encoding: .utf8)
        var o = try NetworkOptions.parse(["--netrc-file", netrcPath])
        #expect(try o.credentials(for: RemoteURL("http://h/x")) == Credentials(user: "nl", password: "np"))
        #expect(try o.credentials(for: RemoteURL("http://u:p@h/x")) == Credentials(user: "u", password: "p"))
        #expect(try o.credentials(for: RemoteURL("http://ou@o/x")) == Credentials(user: "ou", password: "op"))
        #expect(try o.credentials(for: RemoteURL("http://z/x")) == nil)
        o = try NetworkOptions.parse(["--netrc-file", netrcPath, "-u", "cu:cp"])
        #expect(try o.credentials(for: RemoteURL("http://h/x")) == Credentials(user: "cu", password: "cp"))
        o = try NetworkOptions.parse(["--netrc-file", dir + "/missing"])
        let e = #expect(throws: HaulError.self) { try o.credentials(for: RemoteURL("http://h/x")) }
        #expect(e?.code == .usage)
        #expect(throws: (any Error).self) { try NetworkOptions.parse(["--user", "nopass"]) }
        #expect(throws: (any Error).self) { try NetworkOptions.parse(["--no-netrc", "--netrc-file", "x"]) }
        o = try NetworkOptions.parse(["--no-netrc", "--user-agent", "ua/1", "--proxy", "p:3", "--noproxy", "a.b"])
        #expect(o.userAgent == "ua/1")
        let s = try o.proxySettings(environment: ["http_proxy": "http://e:1"])
        #expect(s.proxy(for: try RemoteURL("http://x/")) == ProxyEndpoint(host: "p", port: 3))
        #expect(s.proxy(for: try RemoteURL("http://c.a.b/")) == nil)
    }
}
