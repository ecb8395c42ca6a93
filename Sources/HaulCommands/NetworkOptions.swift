import ArgumentParser
import Haul
import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `haul get` reaches servers: proxies, credentials and the user agent, as curl and wget
/// take them.
struct NetworkOptions: ParsableArguments {
    @Option(
        name: .customLong("proxy"),
        help: ArgumentHelp(
            """
            Use this proxy for http and https (http://[USER:PASSWORD@]HOST[:PORT] or socks5://HOST[:PORT]); '' \
            for none. Overrides http_proxy, https_proxy and all_proxy.
            """,
            valueName: "URL"))
    var proxy: String?

    @Option(
        name: .customLong("noproxy"),
        help: ArgumentHelp(
            """
            Hosts to reach without the proxy, comma-separated (domains match their subdomains; IPs, CIDR ranges; \
            '*' for all). Overrides no_proxy.
            """,
            valueName: "HOSTS"))
    var noProxy: String?

    @Option(
        name: [.customShort("u"), .customLong("user")],
        help: ArgumentHelp(
            "Send these credentials (HTTP Basic) to the URL's own server, never to another one it redirects to.",
            valueName: "USER:PASSWORD"))
    var user: String?

    @Option(
        name: .customLong("netrc-file"),
        help: ArgumentHelp("Read credentials from this netrc file instead of ~/.netrc.", valueName: "PATH"))
    var netrcFile: String?

    @Flag(name: .customLong("no-netrc"), help: "Do not read credentials from ~/.netrc.")
    var noNetrc = false

    @Option(
        name: .customLong("user-agent"),
        help: ArgumentHelp("Send this User-Agent (default: haul/\(HaulVersion.current)).", valueName: "STRING"))
    var userAgentOption: String?

    private enum CodingKeys: String, CodingKey {
        case proxy, noProxy, user, netrcFile, noNetrc, userAgentOption
    }

    func validate() throws {
        if netrcFile != nil, noNetrc { throw ValidationError("--netrc-file and --no-netrc exclude each other") }
        if let user {
            do { _ = try Credentials(userOption: user) } catch { throw ValidationError(error.message) }
        }
        if let userAgentOption, userAgentOption.contains(where: { $0 == "\r" || $0 == "\n" }) {
            throw ValidationError("--user-agent must be one line")
        }
    }

    /// The proxies for this command: the flags over the environment.
    func proxySettings(environment: [String: String]) throws(HaulError) -> ProxySettings {
        try ProxySettings(environment: environment, proxy: proxy, noProxy: noProxy)
    }

    /// Where the command's credentials come from, read once before any URL: `--user` and the
    /// netrc file.
    /// - Throws: `.usage` for a `--user` without a password, a `--netrc-file` that cannot be read,
    ///   or a netrc file that cannot be parsed.
    func credentialSources() throws(HaulError) -> CredentialSources {
        CredentialSources(
            user: try user.map { text throws(HaulError) in try Credentials(userOption: text) }, netrc: try netrc())
    }

    /// The `User-Agent` the user asked for, or nil for the default (`HaulVersion.userAgent`).
    var userAgent: String? { userAgentOption }

    /// `--netrc-file`, else `~/.netrc` when it exists; nil with `--no-netrc`.
    private func netrc() throws(HaulError) -> Netrc? {
        if noNetrc { return nil }
        if let netrcFile {
            guard let text = Self.read(netrcFile) else {
                throw HaulError(.usage, "--netrc-file: cannot read \(netrcFile)")
            }
            return try Self.parse(text, path: netrcFile)
        }
        let home = HaulHome.userHome()
        let path = Paths.join(home, ".netrc")
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let text = Self.read(path) else {
            throw HaulError(.usage, "cannot read \(path) (use --no-netrc to skip it)")
        }
        return try Self.parse(text, path: path)
    }

    private static func read(_ path: String) -> String? {
        guard FileKind(path) == .file, let data = FileManager.default.contents(atPath: path)
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private static func parse(_ text: String, path: String) throws(HaulError) -> Netrc {
        do {
            return try Netrc(parsing: text)
        } catch {
            throw HaulError(.usage, "\(path): \(error.message)")
        }
    }
}

/// `--user` and the netrc file, as read once per command. Kept in memory only.
struct CredentialSources: Sendable {
    var user: Credentials?
    var netrc: Netrc?

    /// The credentials for `url`: its own userinfo, else `--user`, else the netrc entry for its
    /// host (a URL with a user name and no password takes the password netrc has for that user).
    func credentials(for url: RemoteURL) -> Credentials? {
        if let own = url.credentials {
            if own.password.isEmpty, let found = netrc?.credentials(host: url.host, login: own.user) { return found }
            return own
        }
        return user ?? netrc?.credentials(host: url.host)
    }
}

/// curl's `--http1.1` and `--http2`, for `haul get` and `haul serve`. Neither: HTTP/1.1, one TCP
/// connection for each connection a download runs over (`HTTPVersionPolicy.automatic` says why).
struct HTTPVersionOptions: ParsableArguments {
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // Named as the option and as NIO's `HTTPVersion.http1_1` spell it.
    @Flag(name: .customLong("http1.1"), help: "Use HTTP/1.1 only, even where the server offers HTTP/2.")
    var http1_1 = false

    @Flag(
        name: .customLong("http2"),
        help: ArgumentHelp(
            """
            Use HTTP/2 whenever an https server offers it; a file over several connections then takes them as \
            streams of one TCP connection. Default: HTTP/1.1, one TCP connection for each connection (-x).
            """
        ))
    var http2 = false

    func validate() throws {
        if http1_1, http2 { throw ValidationError("--http1.1 and --http2 exclude each other") }
    }

    var policy: HTTPVersionPolicy {
        http1_1 ? .http1_1 : http2 ? .http2 : .automatic
    }
}
