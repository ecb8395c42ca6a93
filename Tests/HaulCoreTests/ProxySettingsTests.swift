import HaulCore
import Testing

/// Proxy settings from the environment and the flags, as curl reads them.
@Suite(.timeLimit(.minutes(1))) struct ProxySettingsTests {
    let http = try! RemoteURL("http://files.example.com/f")
    let https = try! RemoteURL("https://files.example.com/f")

    @Test func variablesPerScheme() throws {
        let settings = try ProxySettings(environment: ["http_proxy": "http://p1:3128", "https_proxy": "p2:8080"])
        #expect(settings.proxy(for: http) == ProxyEndpoint(host: "p1", port: 3128))
        #expect(settings.proxy(for: https) == ProxyEndpoint(host: "p2", port: 8080), "no scheme means http")
        #expect(try ProxySettings(environment: [:]).proxy(for: http) == nil)
    }

    @Test func allProxyFillsInAndLowerCaseWins() throws {
        let settings = try ProxySettings(environment: [
            "ALL_PROXY": "http://all:1", "https_proxy": "http://lower:2", "HTTPS_PROXY": "http://upper:3",
        ])
        #expect(settings.proxy(for: http)?.host == "all")
        #expect(settings.proxy(for: https)?.host == "lower")
        let upper = try ProxySettings(environment: ["HTTP_PROXY": "http://upper:3"])
        #expect(upper.proxy(for: http)?.host == "upper")
        #expect(upper.proxy(for: https) == nil)
        // A set but empty lower-case variable means no proxy, whatever the upper-case one says.
        let empty = try ProxySettings(environment: ["http_proxy": "", "HTTP_PROXY": "http://upper:3"])
        #expect(empty.proxy(for: http) == nil)
    }

    @Test func defaultPortAndCredentials() throws {
        let endpoint = try ProxyEndpoint(parsing: "http://us%40er:p%3Ass@proxy.local/", source: "--proxy")
        #expect(
            endpoint
                == ProxyEndpoint(
                    kind: .http, host: "proxy.local", port: 1080,
                    credentials: Credentials(user: "us@er", password: "p:ss")))
        #expect("\(endpoint)" == "http://proxy.local:1080")
        // An empty userinfo is no credentials (no `Proxy-Authorization: Basic Og==`), as in a URL.
        #expect(try ProxyEndpoint(parsing: "http://@proxy.local:3128", source: "x").credentials == nil)
        #expect(try ProxyEndpoint(parsing: "[::1]:3128", source: "x") == ProxyEndpoint(host: "::1", port: 3128))
        #expect("\(ProxyEndpoint(host: "::1", port: 3128))" == "http://[::1]:3128")
        #expect(
            try ProxyEndpoint(parsing: "socks5://s:9050", source: "x")
                == ProxyEndpoint(kind: .socks5, host: "s", port: 9050))
        #expect(try ProxyEndpoint(parsing: "SOCKS5H://s", source: "x").kind == .socks5)
    }

    @Test(arguments: [
        ("ftp://p:21", "all_proxy: unsupported scheme 'ftp' (use http:// or socks5://) in proxy 'ftp://p:21'"),
        (
            "https://p:443",
            "all_proxy: HTTPS proxies (TLS to the proxy) are not supported, use http:// in proxy 'https://p:443'"
        ),
        ("http://p:99999", "all_proxy: a bad port '99999' in proxy 'http://p:99999'"),
        ("http://p:abc", "all_proxy: a bad port 'abc' in proxy 'http://p:abc'"),
        ("http://:8080", "all_proxy: no host in proxy 'http://:8080'"),
        ("http://p:1/some/path", "all_proxy: a path in proxy 'http://p:1/some/path'"),
        (
            "socks5://u:pw@s:1",
            "all_proxy: a user name and password (not supported for SOCKS) in proxy 'socks5://***@s:1'"
        ),
        ("http://u:s3cret@p:x", "all_proxy: a bad port 'x' in proxy 'http://***@p:x'"),
        ("http://u:s3/cret@p:1", "all_proxy: a path in proxy 'http://***@p:1'"),
    ])
    func malformedProxiesAreUsageErrors(text: String, message: String) {
        let error = #expect(throws: HaulError.self) { try ProxySettings(environment: ["all_proxy": text]) }
        #expect(error?.code == .usage)
        #expect(error?.message == message)
    }

    @Test func flagsOverrideTheEnvironment() throws {
        let environment = [
            "http_proxy": "http://env:1", "https_proxy": "http://env:2", "no_proxy": "files.example.com",
        ]
        let flag = try ProxySettings(environment: environment, proxy: "http://flag:3")
        #expect(flag.proxy(for: http) == nil, "no_proxy from the environment still applies")
        let flagged = try ProxySettings(environment: environment, proxy: "http://flag:3", noProxy: "other.example")
        #expect(flagged.proxy(for: http)?.host == "flag")
        #expect(flagged.proxy(for: https)?.host == "flag")
        #expect(
            try ProxySettings(environment: environment, proxy: "").proxy(for: https) == nil,
            "--proxy '' turns proxies off")
        #expect(try ProxySettings(environment: environment, noProxy: "*").proxy(for: https) == nil)
        #expect(try ProxySettings(environment: environment, noProxy: "").proxy(for: https)?.host == "env")
        let error = #expect(throws: HaulError.self) { try ProxySettings(environment: [:], proxy: "gopher://x") }
        #expect(error?.message.hasPrefix("--proxy: ") == true)
    }

    @Test func noProxyDomains() {
        let rules = NoProxy(parsing: " example.com, .corp.local ,localhost,  intranet:8080")
        #expect(rules.matches(host: "example.com", port: 80))
        #expect(rules.matches(host: "a.b.EXAMPLE.com", port: 443))
        #expect(rules.matches(host: "example.com.", port: 80), "a trailing dot is the same name")
        #expect(!rules.matches(host: "notexample.com", port: 80))
        #expect(!rules.matches(host: "example.com.evil", port: 80))
        #expect(rules.matches(host: "corp.local", port: 80) && rules.matches(host: "x.corp.local", port: 80))
        #expect(rules.matches(host: "localhost", port: 1))
        #expect(rules.matches(host: "intranet", port: 8080) && !rules.matches(host: "intranet", port: 80))
        #expect(NoProxy(parsing: "*").matches(host: "anything", port: 1))
        #expect(NoProxy(parsing: "a b").matches(host: "b", port: 1), "spaces separate too")
        #expect(!NoProxy(parsing: "").matches(host: "a", port: 1))
    }

    @Test func noProxyAddressesAndRanges() {
        let rules = NoProxy(parsing: "10.0.0.0/8,192.168.1.7,::1,[fe80::]/10,[2001:db8::5]:8443,172.16.0.0/12")
        #expect(rules.matches(host: "10.200.3.4", port: 80))
        #expect(!rules.matches(host: "11.0.0.1", port: 80))
        #expect(rules.matches(host: "192.168.1.7", port: 80) && !rules.matches(host: "192.168.1.8", port: 80))
        #expect(rules.matches(host: "[::1]", port: 80), "RemoteURL keeps the brackets")
        #expect(rules.matches(host: "[0:0:0:0:0:0:0:1]", port: 80))
        #expect(rules.matches(host: "[fe80::1234:5678]", port: 80) && !rules.matches(host: "[fec0::1]", port: 80))
        #expect(rules.matches(host: "[2001:db8::5]", port: 8443) && !rules.matches(host: "[2001:db8::5]", port: 443))
        #expect(rules.matches(host: "172.31.255.255", port: 1) && !rules.matches(host: "172.32.0.0", port: 1))
        #expect(!rules.matches(host: "10.example.com", port: 80), "names are not addresses")
        #expect(NoProxy(parsing: "127.0.0.1:8080").matches(host: "127.0.0.1", port: 8080))
        #expect(!NoProxy(parsing: "127.0.0.1:8080").matches(host: "127.0.0.1", port: 8081))
        #expect(NoProxy(parsing: "::ffff:10.0.0.1").matches(host: "[::ffff:10.0.0.1]", port: 1))
        #expect(NoProxy(parsing: "0.0.0.0/0").matches(host: "8.8.8.8", port: 1))
        #expect(
            !NoProxy(parsing: "10.0.0.0/33,1.2.3/8,::g").matches(host: "10.0.0.1", port: 1), "bad entries are ignored")
    }

    @Test func urlsWithPortsAndNoProxy() throws {
        let settings = try ProxySettings(environment: ["http_proxy": "http://p:1", "no_proxy": "127.0.0.1:8080"])
        #expect(settings.proxy(for: try RemoteURL("http://127.0.0.1:8080/x")) == nil)
        #expect(settings.proxy(for: try RemoteURL("http://127.0.0.1:8081/x"))?.host == "p")
        #expect(settings.proxy(for: try RemoteURL("http://127.0.0.1/x"))?.host == "p")
        #expect(
            try ProxySettings(environment: ["http_proxy": "http://p:1", "no_proxy": "h:80"])
                .proxy(for: try RemoteURL("http://h/x")) == nil, "the default port counts")
    }

    @Test func proxyCredentialsDoNotPrint() throws {
        let settings = try ProxySettings(environment: ["all_proxy": "http://u:s3cret@p:1"])
        #expect(settings.proxy(for: http)?.credentials?.password == "s3cret")
        #expect(!"\(settings)".contains("s3cret") && !String(reflecting: settings).contains("s3cret"))
    }
}
