/// Which proxy, if any, each URL goes through: curl's environment variables and flags.
///
/// - `http_proxy` for http:// URLs, `https_proxy` for https:// URLs, `all_proxy` for both when
///   the specific one is not set; each also in upper case, the lower-case name winning when both
///   are set (an empty value means no proxy).
/// - `no_proxy`: hosts that go direct (see ``NoProxy``).
/// - `--proxy URL` replaces the environment's proxies for both schemes; `--proxy ""` turns
///   proxies off. `--noproxy HOSTS` replaces `no_proxy`; `--noproxy '*'` turns proxies off.
public struct ProxySettings: Hashable, Sendable {
    /// For http:// URLs.
    public var http: ProxyEndpoint?
    /// For https:// URLs (through a `CONNECT` tunnel when the proxy speaks HTTP).
    public var https: ProxyEndpoint?
    /// Hosts that go direct even when a proxy is set (`no_proxy`, `--noproxy`).
    public var noProxy: NoProxy

    /// Settings with these proxies; with none given, every URL goes direct.
    public init(http: ProxyEndpoint? = nil, https: ProxyEndpoint? = nil, noProxy: NoProxy = NoProxy()) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// No proxy for anything.
    public static let direct = ProxySettings()

    /// The proxies the environment names (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy` and their upper
    /// case forms), overridden by the flags when given.
    ///
    /// - Parameters:
    ///   - environment: the process's environment variables.
    ///   - proxy: `--proxy`, when given (empty: no proxy at all).
    ///   - noProxy: `--noproxy`, when given.
    /// - Throws: `.usage` for a proxy URL that is malformed or of a scheme haul cannot use,
    ///   naming the variable or flag it came from.
    public init(environment: [String: String], proxy: String? = nil, noProxy: String? = nil) throws(HaulError) {
        func variable(_ name: String) -> (name: String, value: String)? {
            if let value = environment[name] { return (name, value) }
            if let value = environment[name.uppercased()] { return (name.uppercased(), value) }
            return nil
        }
        func endpoint(_ found: (name: String, value: String)?) throws(HaulError) -> ProxyEndpoint? {
            guard let found, !found.value.trimmingSpaces().isEmpty else { return nil }
            return try ProxyEndpoint(parsing: found.value, source: found.name)
        }
        if let proxy {
            let endpoint = proxy.trimmingSpaces().isEmpty ? nil : try ProxyEndpoint(parsing: proxy, source: "--proxy")
            self.http = endpoint
            self.https = endpoint
        } else {
            let all = variable("all_proxy")
            self.http = try endpoint(variable("http_proxy") ?? all)
            self.https = try endpoint(variable("https_proxy") ?? all)
        }
        self.noProxy = NoProxy(parsing: noProxy ?? variable("no_proxy")?.value ?? "")
    }

    /// The proxy for `url`, or nil to connect directly.
    public func proxy(for url: RemoteURL) -> ProxyEndpoint? {
        let endpoint = url.scheme == "https" ? https : http
        guard let endpoint, !noProxy.matches(host: url.host, port: url.effectivePort) else { return nil }
        return endpoint
    }
}

/// One proxy server: `http://[user:password@]host[:port]` (a missing scheme means http, a
/// missing port 1080, as in curl) or `socks5://host[:port]` (`socks5h` alike; no credentials).
public struct ProxyEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The protocol spoken to the proxy, named as its URL's scheme.
    public enum Kind: String, Hashable, Sendable {
        /// An HTTP proxy: `CONNECT` tunnels, `Proxy-Authorization: Basic` when credentials are set.
        case http
        /// A SOCKS5 proxy (`socks5://`, also `socks5h://`), without authentication.
        case socks5
    }

    /// The protocol spoken to the proxy.
    public var kind: Kind
    /// Without the brackets of an IPv6 address.
    public var host: String
    /// The proxy's TCP port; 1080 when its URL names none.
    public var port: Int
    /// Sent as `Proxy-Authorization: Basic`; never printed (see ``Credentials``).
    public var credentials: Credentials?

    /// An endpoint with these fields, taken as given (`host` without brackets).
    public init(kind: Kind = .http, host: String, port: Int = 1080, credentials: Credentials? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// The proxy's URL without credentials.
    public var description: String {
        "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// A proxy from its URL (`http://HOST:PORT`, credentials allowed, or `socks5://` and
    /// `socks5h://`).
    ///
    /// - Parameters:
    ///   - text: the proxy's URL.
    ///   - source: the flag or variable the text came from, for the error message.
    public init(parsing text: String, source: String) throws(HaulError) {
        let trimmed = text.trimmingSpaces()
        let shown = RemoteURL.redacted(trimmed.contains("://") ? trimmed : "http://" + trimmed)
        func bad(_ why: String) -> HaulError { HaulError(.usage, "\(source): \(why) in proxy '\(shown)'") }
        var rest = Substring(trimmed)
        var kind = Kind.http
        if let range = rest.firstRange(of: "://") {
            switch rest[..<range.lowerBound].lowercased() {
            case "http": kind = .http
            case "socks5", "socks5h": kind = .socks5
            case "https": throw bad("HTTPS proxies (TLS to the proxy) are not supported, use http://")
            case let scheme:
                throw bad("unsupported scheme '\(scheme)' (use http:// or socks5://)")
            }
            rest = rest[range.upperBound...]
        }
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...] == "/" else { throw bad("a path") }
            rest = rest[..<slash]
        }
        var credentials: Credentials?
        if let at = rest.lastIndex(of: "@") {
            credentials = Credentials(userinfo: rest[..<at])
            rest = rest[rest.index(after: at)...]
            if kind == .socks5 { throw bad("a user name and password (not supported for SOCKS)") }
        }
        var host = rest
        var portText: Substring?
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { throw bad("a bad IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw bad("a bad host") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else { throw bad("no host") }
        guard !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "@") }) else {
            throw bad("a bad host")
        }
        var port = 1080
        if let portText {
            guard let value = Int(portText), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                (1...65535).contains(value)
            else {
                throw bad("a bad port '\(portText)'")
            }
            port = value
        }
        self.init(kind: kind, host: String(host), port: port, credentials: credentials)
    }
}

/// `no_proxy` / `--noproxy` as curl reads it: names separated by commas (or spaces); `*` alone
/// matches everything; a name matches itself and its subdomains (`example.com` and
/// `.example.com` both match `a.example.com`); `host:port` only that port; IP addresses and
/// CIDR ranges (`10.0.0.0/8`, `::1`, `[::1]:8080`, `fe80::/10`) match hosts written as
/// addresses (names are not resolved). Entries that are none of these are ignored.
public struct NoProxy: Hashable, Sendable {
    enum Rule: Hashable, Sendable {
        case all
        case domain(String, port: Int?)
        case network(address: [UInt8], prefix: Int, port: Int?)
    }

    var rules: [Rule]

    /// An empty list: no host goes direct.
    public init() { rules = [] }

    /// Reads a `no_proxy` or `--noproxy` value; entries that cannot be read are dropped.
    public init(parsing text: String) {
        rules = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).compactMap(Self.rule)
    }

    /// True when no entry was read, so no host goes direct.
    public var isEmpty: Bool { rules.isEmpty }

    static func rule(_ entry: Substring) -> Rule? {
        let entry = Substring(String(entry).trimmingSpaces())
        guard !entry.isEmpty else { return nil }
        if entry == "*" { return .all }
        if let slash = entry.firstIndex(of: "/") {
            var addressText = entry[..<slash]
            if addressText.first == "[", addressText.last == "]" { addressText = addressText.dropFirst().dropLast() }
            guard let address = IPAddress.parse(addressText), let prefix = Int(entry[entry.index(after: slash)...]),
                (0...address.count * 8).contains(prefix)
            else { return nil }
            return .network(address: address, prefix: prefix, port: nil)
        }
        if entry.first == "[" {
            guard let close = entry.firstIndex(of: "]"),
                let address = IPAddress.parse(entry[entry.index(after: entry.startIndex)..<close])
            else {
                return nil
            }
            let after = entry[entry.index(after: close)...]
            var port: Int?
            if !after.isEmpty {
                guard after.first == ":", let value = Int(after.dropFirst()) else { return nil }
                port = value
            }
            return .network(address: address, prefix: address.count * 8, port: port)
        }
        let colons = entry.count(where: { $0 == ":" })
        if colons >= 2 {
            guard let address = IPAddress.parse(entry) else { return nil }
            return .network(address: address, prefix: 128, port: nil)
        }
        var name = entry
        var port: Int?
        if colons == 1, let colon = entry.firstIndex(of: ":") {
            guard let value = Int(entry[entry.index(after: colon)...]) else { return nil }
            name = entry[..<colon]
            port = value
        }
        if let address = IPAddress.parse(name) { return .network(address: address, prefix: 32, port: port) }
        while name.first == "." { name = name.dropFirst() }
        while name.last == "." { name = name.dropLast() }
        guard !name.isEmpty else { return nil }
        return .domain(name.lowercased(), port: port)
    }

    /// Whether a URL with this host (as in ``RemoteURL/host``, brackets allowed) and port
    /// goes direct.
    public func matches(host: String, port: Int) -> Bool {
        var name = Substring(host.lowercased())
        if name.first == "[", name.last == "]" { name = name.dropFirst().dropLast() }
        while name.last == "." { name = name.dropLast() }
        let address = IPAddress.parse(name)
        for rule in rules {
            switch rule {
            case .all:
                return true
            case .domain(let domain, let rulePort):
                guard rulePort == nil || rulePort == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .network(let network, let prefix, let rulePort):
                guard rulePort == nil || rulePort == port, let address, address.count == network.count else { continue }
                if IPAddress.prefix(of: address, equals: network, bits: prefix) { return true }
            }
        }
        return false
    }
}

/// IPv4 and IPv6 literals as bytes (4 or 16), without a resolver.
enum IPAddress {
    static func parse(_ text: Substring) -> [UInt8]? {
        if text.contains(":") { return parseV6(text) }
        return parseV4(text)
    }

    static func parseV4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func parseV6(_ text: Substring) -> [UInt8]? {
        var text = text
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        func groups(_ part: Substring) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseV4(piece) else { return nil }
                    bytes += v4
                } else {
                    guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                    bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
                }
            }
            return bytes
        }
        if let gap = text.firstRange(of: "::") {
            guard let head = groups(text[..<gap.lowerBound]), let tail = groups(text[gap.upperBound...]),
                head.count + tail.count <= 14
            else { return nil }
            return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
        }
        guard let bytes = groups(text), bytes.count == 16 else { return nil }
        return bytes
    }

    static func prefix(of address: [UInt8], equals network: [UInt8], bits: Int) -> Bool {
        var remaining = bits
        for index in address.indices where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - take))
            if address[index] & mask != network[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}
