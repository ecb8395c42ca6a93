import HaulAPI
import HaulCore
import Hummingbird

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

/// Which `Host` headers and `Origin`s name this daemon. A browser sends the page's own host
/// name in `Host`, so a DNS-rebinding page (evil.example resolving to 127.0.0.1) is told apart
/// from a real client by the name: only loopback names and addresses, the `--host` it listens
/// on and the `--allow-host` names are accepted; bound to every address (0.0.0.0, ::), any IP
/// address literal too (a rebinding needs a name, never an address).
public struct HostCheck: Sendable {
    let configuredHost: String
    let allowedNames: Set<String>
    let acceptsAddresses: Bool

    public init(host: String, allowedNames: [String] = []) {
        configuredHost = Self.normalized(host)
        self.allowedNames = Set(allowedNames.map(Self.normalized))
        acceptsAddresses = ["0.0.0.0", "::", ""].contains(configuredHost)
    }

    /// Whether a `Host` value (`name`, `name:port`, `[v6]:port`) names this daemon.
    public func allows(authority: String) -> Bool {
        guard let name = Self.hostname(of: authority) else { return false }
        if name == "localhost" || name == configuredHost || allowedNames.contains(name) { return true }
        if Daemon.isLoopback(name) { return true }
        return acceptsAddresses && Self.isAddress(name)
    }

    /// Whether a WebSocket's `Origin` is this daemon's own: an allowed name on the port the
    /// request came to. No `Origin` (not a browser) is fine.
    public func allows(origin: String?, authority: String?) -> Bool {
        guard let origin else { return true }
        guard let authority, let schemeEnd = origin.firstRange(of: "://") else { return false }
        let scheme = origin[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return false }
        let originAuthority = String(origin[schemeEnd.upperBound...])
        let defaultPort = scheme == "https" ? "443" : "80"
        return allows(authority: originAuthority)
            && (Self.port(of: originAuthority) ?? defaultPort) == (Self.port(of: authority) ?? "80")
    }

    /// The host name of an authority, lowercased, without brackets, port or a final dot; nil
    /// for something that is not one (a user part, a path, spaces).
    static func hostname(of authority: String) -> String? {
        let text = authority.lowercased()
        guard !text.isEmpty, !text.contains(where: { "/@?# \t".contains($0) }) else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let name = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return normalized(String(name))
    }

    static func port(of authority: String) -> String? {
        let afterBracket =
            authority.lastIndex(of: "]").map { authority[authority.index(after: $0)...] } ?? authority[...]
        guard let colon = afterBracket.lastIndex(of: ":") else { return nil }
        let port = afterBracket[afterBracket.index(after: colon)...]
        return port.isEmpty ? nil : String(port)
    }

    private static func normalized(_ name: String) -> String {
        var name = String(name.lowercased().trimmed { $0 == "[" || $0 == "]" })
        if name.hasSuffix("."), name.count > 1 { name.removeLast() }
        return name
    }

    private static func isAddress(_ name: String) -> Bool {
        // Bytes rather than in_addr/in6_addr: which C module declares those depends on the
        // order clang meets the headers in.
        var v4 = [UInt8](repeating: 0, count: 4)
        var v6 = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}

/// Refuses, with 421 and `misdirected-request`, any request whose `Host` is not this daemon's.
/// A request without `Host` (HTTP/1.0, no browser) passes.
struct HostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let check: HostCheck
    private static var host: HTTPFields.Element.Name { HTTPFields.Element.Name("Host")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        // The first `Host` became `authority`; any other is still a header field.
        if request.headers[Self.host] != nil {
            throw HaulError(.badRequest, "more than one Host header")
        }
        if let authority = request.head.authority, !check.allows(authority: authority) {
            throw DaemonError(
                .misdirected,
                """
                Host '\(authority.prefix(100))' does not name this daemon: use its address, localhost, or start \
                it with --allow-host NAME
                """
            )
        }
        return try await next(request, context)
    }
}
