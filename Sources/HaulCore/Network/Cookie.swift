/// One HTTP cookie (RFC 6265), as a Netscape cookie file line or a `Set-Cookie` field gives it.
///
/// A cookie is a credential: `description`, `debugDescription` and the mirror (what `print`,
/// string interpolation, `dump` and `String(reflecting:)` of anything holding one use) hide its
/// value, as `Credentials` hides a password. Deliberately not `Codable`: only a cookie file the
/// user names (`--save-cookies`, written 0600) keeps it.
public struct Cookie: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The cookie's name, as the `Cookie` field sends it.
    public var name: String
    /// The cookie's value: a credential, hidden by `description` and the mirror.
    public var value: String
    /// Lowercased, without a leading dot.
    public var domain: String
    /// True: sent to `domain` only (no `Domain` attribute, or a file line whose flag is FALSE).
    /// False: sent to `domain` and its subdomains.
    public var hostOnly: Bool
    /// Starts with "/".
    public var path: String
    /// Sent over https only.
    public var secure: Bool
    /// Marked `HttpOnly` (not for scripts). Changes nothing for Haul; kept so a saved cookie file says so.
    public var httpOnly: Bool
    /// Seconds since 1970; nil for a session cookie (expiry 0 in a cookie file).
    public var expires: Int64?

    /// A cookie with these fields. `domain` is lowercased and loses any leading dots; a `path`
    /// that does not start with `/` becomes `/`.
    public init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/", secure: Bool = false,
        httpOnly: Bool = false, expires: Int64? = nil
    ) {
        self.name = name
        self.value = value
        var domain = domain.lowercased()
        while domain.hasPrefix(".") { domain.removeFirst() }
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path.hasPrefix("/") ? path : "/"
        self.secure = secure
        self.httpOnly = httpOnly
        self.expires = expires
    }

    /// Gone at `now` (seconds since 1970). Session cookies never expire within a command.
    public func isExpired(now: Int64) -> Bool {
        expires.map { $0 <= now } ?? false
    }

    /// Whether a request to `url` carries this cookie: domain (§5.1.3, or the exact host for a
    /// host-only cookie), path (§5.1.4), and `Secure` only over https.
    public func matches(_ url: RemoteURL) -> Bool {
        if secure, url.scheme != "https" { return false }
        let host = url.host.lowercased()
        if hostOnly ? host != domain : !Self.domainMatches(host: host, domain: domain) { return false }
        return Self.pathMatches(requestPath: url.path, cookiePath: path)
    }

    /// RFC 6265 §5.1.3: the host is the domain, or ends with "." + domain and is a name, not an
    /// IP address.
    public static func domainMatches(host: String, domain: String) -> Bool {
        let host = host.lowercased()
        let domain = domain.lowercased()
        if host == domain { return true }
        guard !domain.isEmpty, host.hasSuffix("." + domain) else { return false }
        return !RemoteURL.isIPAddress(host)
    }

    /// RFC 6265 §5.1.4.
    public static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }

    /// RFC 6265 §5.1.4's default-path: the request path up to, not including, its last "/"
    /// ("/" when that leaves nothing).
    public static func defaultPath(of requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex
        else {
            return "/"
        }
        return String(requestPath[..<slash])
    }

    /// Same name, domain and path: a later one replaces it (§5.3 step 11).
    func replaces(_ other: Cookie) -> Bool {
        name == other.name && domain == other.domain && path == other.path
    }

    /// `name=*** (domain/path)`, the domain with a leading dot when subdomains get the cookie too; never
    /// the value.
    public var description: String { "\(name)=*** (\(hostOnly ? "" : ".")\(domain)\(path))" }
    /// `Cookie(...)` around `description`: the value hidden.
    public var debugDescription: String { "Cookie(\(description))" }
    /// The name, domain and path, and `***` for the value.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": name, "value": "***", "domain": domain, "path": path])
    }
}
