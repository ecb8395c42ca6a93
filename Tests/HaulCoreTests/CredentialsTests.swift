import Foundation
import HaulCore
import Testing

/// Credentials: `--user`, and the URL's userinfo kept out of everything that
/// is printed or stored.
@Suite(.timeLimit(.minutes(1))) struct CredentialsTests {
    @Test func printingNeverShowsThePassword() {
        let credentials = Credentials(user: "alice", password: "s3cret")
        var plan = RequestPlan(url: try! RemoteURL("http://h/f"), range: nil, ifRange: nil, headers: [:])
        plan.credentials = credentials
        var dumped = ""
        dump(plan, to: &dumped)
        for text in ["\(credentials)", String(reflecting: credentials), "\(plan)", String(reflecting: plan), dumped] {
            #expect(!text.contains("s3cret"), "\(text)")
        }
        #expect("\(credentials)" == "alice:***")
    }

    @Test func userOption() throws {
        #expect(try Credentials(userOption: "bob:pa:ss") == Credentials(user: "bob", password: "pa:ss"))
        #expect(try Credentials(userOption: "bob:") == Credentials(user: "bob", password: ""))
        let noPassword = #expect(throws: HaulError.self) { try Credentials(userOption: "bob") }
        #expect(noPassword?.code == .usage)
        #expect(noPassword?.message == "--user needs USER:PASSWORD (haul cannot prompt for a password)")
        #expect(throws: HaulError.self) { try Credentials(userOption: ":pass") }
    }

    @Test func urlUserinfoBecomesCredentials() throws {
        let url = try RemoteURL("https://us%40er:p%3Ass%20w@Example.com:8443/a/b?q=1")
        #expect(url.absoluteString == "https://Example.com:8443/a/b?q=1")
        #expect(url.credentials == Credentials(user: "us@er", password: "p:ss w"))
        #expect(url.host == "Example.com" && url.port == 8443 && url.path == "/a/b")
        #expect("\(url)" == "https://Example.com:8443/a/b?q=1")
        #expect(try RemoteURL("http://user@h/").credentials == Credentials(user: "user", password: ""))
        #expect(try RemoteURL("http://@h/").credentials == nil)
        #expect(try RemoteURL("http://h/a@b").credentials == nil, "an @ in the path is no userinfo")
        #expect(try RemoteURL("http://h/a@b").absoluteString == "http://h/a@b")
        #expect(try RemoteURL("http://a:b@[::1]:81/").host == "[::1]")
    }

    @Test func credentialsAreNoPartOfIdentityEqualityOrEncoding() throws {
        let plain = try RemoteURL("http://h/file")
        let withUser = try RemoteURL("http://alice:s3cret@h/file")
        #expect(plain == withUser)
        #expect(plain.hashValue == withUser.hashValue)
        let request = try DownloadRequest(
            url: withUser, destination: .directory("/d"), credentials: withUser.credentials)
        let other = try DownloadRequest(url: plain, destination: .directory("/d"))
        #expect(request.credentials == Credentials(user: "alice", password: "s3cret"))
        #expect(request == other && request.hashValue == other.hashValue)
        #expect(request.identity == other.identity)
        #expect(!request.identity.contains("s3cret"))
        let json = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        #expect(json.contains("http:\\/\\/h\\/file"), "\(json)")
        #expect(!json.contains("s3cret") && !json.contains("alice"), "\(json)")
        let decoded = try JSONDecoder().decode(DownloadRequest.self, from: Data(json.utf8))
        #expect(decoded == other && decoded.credentials == nil)
        // A URL stored with userinfo before this change decodes without it.
        let old = #"{"absoluteString":"http://alice:s3cret@h/file","scheme":"http","host":"h","path":"/file"}"#
        let oldURL = try JSONDecoder().decode(RemoteURL.self, from: Data(old.utf8))
        #expect(oldURL.absoluteString == "http://h/file" && oldURL.credentials?.password == "s3cret")
    }

    @Test func errorsAboutBadURLsHideTheUserinfo() {
        // A password with an unescaped / ends the authority early: its start reads as a port.
        for text in [
            "ftp://u:s3cret@h/x", "http://u:s3cret@h/a b", "http://u:s3cret@h:99999/", "http://u:s3cret/x@h/",
            "http://u:pa/s3cret@h/f", "http://[::1:s3cret/x@h/",
        ] {
            let error = #expect(throws: HaulError.self) { try RemoteURL(text) }
            #expect(error.map { !"\($0)".contains("s3cret") } == true, "\(String(describing: error))")
        }
    }

    @Test func sameOrigin() throws {
        let base = try RemoteURL("http://Host.example/a")
        #expect(base.hasSameOrigin(as: try RemoteURL("http://host.example:80/b")))
        #expect(!base.hasSameOrigin(as: try RemoteURL("https://host.example/a")))
        #expect(!base.hasSameOrigin(as: try RemoteURL("http://host.example:8080/a")))
        #expect(!base.hasSameOrigin(as: try RemoteURL("http://other.example/a")))
        #expect(try RemoteURL("https://h/").effectivePort == 443)
    }

    @Test func redirectTargetsResolveAgainstTheURL() throws {
        let base = try RemoteURL("http://user:pw@h:8080/dir/sub/file?x=1")
        #expect(try base.resolving("other").absoluteString == "http://h:8080/dir/sub/other")
        #expect(try base.resolving("../up?y=2").absoluteString == "http://h:8080/dir/up?y=2")
        #expect(try base.resolving("/root#frag").absoluteString == "http://h:8080/root")
        #expect(try base.resolving("?z=3").absoluteString == "http://h:8080/dir/sub/file?z=3")
        #expect(try base.resolving("//cdn.example/x").absoluteString == "http://cdn.example/x")
        #expect(try base.resolving("HTTPS://cdn.example/y").absoluteString == "HTTPS://cdn.example/y")
        #expect(try base.resolving("./a/./b/../c").absoluteString == "http://h:8080/dir/sub/a/c")
        #expect(try base.resolving("other").credentials == nil, "credentials never follow a redirect by themselves")
        #expect(try base.resolving("http://x:y@cdn.example/").credentials == Credentials(user: "x", password: "y"))
        #expect(throws: HaulError.self) { try base.resolving("ftp://cdn.example/") }
    }
}
