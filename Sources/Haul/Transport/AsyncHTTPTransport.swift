import AsyncHTTPClient
import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The real transport: AsyncHTTPClient, streaming. Its response body applies backpressure, so a
/// slow disk slows the socket instead of filling memory (DESIGN rule 6).
///
/// Clients: AsyncHTTPClient's proxy and HTTP version are properties of a whole client, so there
/// is one client per proxy endpoint (nil: direct) and version (HTTP/1.1 only, or HTTP/2 when the
/// server offers it), made when first needed; `RequestPlan.allowsHTTP2` picks the version.
/// Redirects are followed here, not by AsyncHTTPClient, so that each hop goes through the proxy
/// its own URL calls for (`no_proxy` may differ between hosts) and credentials go only to the
/// origin they were given for.
///
/// Closing: a connection haul closes (a body cut short, the end of a run) closes at once. TLS
/// would otherwise wait up to `TLSConfiguration.shutdownTimeout` (5 s by default) for the
/// server's close_notify, which a server busy sending a body never reads; `HTTPClient.shutdown()`
/// waits for every connection to close, so `haul get` ended 5 s after its last byte.
///
/// How a failure is named for the user is in `AsyncHTTPTransport+Errors.swift`; the body a
/// response is read through is `AsyncHTTPBody`.
public final class AsyncHTTPTransport: HTTPTransport {
    /// How the transport's clients connect and what they send: timeouts, redirects, trust,
    /// connections per host, proxies, user agent and cookies.
    public struct Configuration: Sendable, Hashable {
        /// How long making one connection may take before the request fails with `network` (the
        /// download's retries decide what comes next).
        public var connectTimeout: Duration
        /// No byte for this long means the connection is dead; the download retries.
        public var readTimeout: Duration
        /// Redirects followed for one request; one more fails it with `tooManyRedirects`, as
        /// does a redirect back to a URL already visited.
        public var maxRedirects: Int
        /// PEM files of certificate authorities to trust besides the system's (a private CA).
        public var additionalTrustRoots: [String]
        /// HTTP/1.1 connections open to one host at once, over all downloads (an HTTP/2 client
        /// keeps one connection per host and as many streams on it as the server allows).
        public var maxConnectionsPerHost: Int
        /// Which proxy each URL goes through.
        public var proxies: ProxySettings
        /// Sent unless the request's own headers name one.
        public var userAgent: String
        /// The cookies sent with every hop whose domain and path they match, and where each
        /// hop's `Set-Cookie` goes; nil: no cookies are sent or kept (the daemon).
        public var cookies: CookieStore?
        /// The keys that sign a request whose plan asks for it (`RequestPlan.signing`: an
        /// `s3://` object), at the moment it is sent; nil: such requests go unsigned (a public
        /// bucket).
        public var awsCredentials: SigV4.Credentials?

        /// Defaults: 10 s to connect, 60 s without a byte, 10 redirects, 1024 connections per
        /// host, no proxy, no extra trust roots, haul's own user agent, no cookies and no AWS keys.
        public init(
            connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(60), maxRedirects: Int = 10,
            additionalTrustRoots: [String] = [], maxConnectionsPerHost: Int = 1024,
            proxies: ProxySettings = .direct, userAgent: String = HaulVersion.userAgent, cookies: CookieStore? = nil,
            awsCredentials: SigV4.Credentials? = nil
        ) {
            self.awsCredentials = awsCredentials
            self.cookies = cookies
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.maxRedirects = maxRedirects
            self.additionalTrustRoots = additionalTrustRoots
            self.proxies = proxies
            self.userAgent = userAgent
        }
    }

    /// The settings every client of this transport is made with.
    public let configuration: Configuration
    private let logger: Logger
    /// Numbers the connections of every client, so responses tell which one they came over.
    private let numbers = ConnectionNumbers()

    struct ClientKey: Hashable {
        /// Nil: direct.
        var proxy: ProxyEndpoint?
        /// HTTP/2 when the server offers it (ALPN), else HTTP/1.1.
        var http2: Bool
    }

    private struct Clients {
        var made: [ClientKey: HTTPClient] = [:]
        var isShutDown = false
    }
    private let clients = NIOLockedValueBox(Clients())

    /// A transport with `configuration`'s timeouts, proxies, trust roots and cookies; its
    /// clients are made on first use, one per proxy and HTTP version, and closed by `shutdown()`.
    ///
    /// - Parameters:
    ///   - configuration: timeouts, proxies, TLS trust, cookies and connection limits.
    ///   - logger: for what the transport cannot do but need not fail on (a connection it cannot
    ///     count, a client that does not shut down cleanly).
    public init(
        configuration: Configuration = .init(),
        logger: Logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The TLS settings of every client: the extra trust roots, and no wait for the server's
    /// close_notify when closing (see the type's comment).
    static func tlsConfiguration(_ configuration: Configuration) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = configuration.additionalTrustRoots.map { .file($0) }
        tls.shutdownTimeout = .zero
        return tls
    }

    /// What the client for `key` is made with.
    func clientConfiguration(for key: ClientKey) -> HTTPClient.Configuration {
        var config = HTTPClient.Configuration()
        // Followed by `send`, hop by hop (see the type's comment).
        config.redirectConfiguration = .disallow
        config.timeout = .init(connect: .init(configuration.connectTimeout), read: .init(configuration.readTimeout))
        config.decompression = .disabled
        // ALPN offers h2 only from the HTTP/2 client; over plain http both speak HTTP/1.1.
        config.httpVersion = key.http2 ? .automatic : .http1Only
        // The default of 8 per host would queue the 9th download (or connection) silently
        // inside the client while it shows as running. HTTP/1.1 only: an HTTP/2 connection
        // carries as many streams as the server's SETTINGS allow (nginx: 128), and requests past
        // that wait inside the client for a free stream.
        config.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.maxConnectionsPerHost)
        // A connection that cannot be made fails its request at once: haul's own retries (counted,
        // backed off, shown) decide what comes next. AsyncHTTPClient would otherwise retry a
        // refused port silently until the connect timeout, 10 s per try.
        config.connectionPool.retryConnectionEstablishment = false
        // Always set: AsyncHTTPClient's default TLS configuration waits 5 s for close_notify.
        config.tlsConfiguration = Self.tlsConfiguration(configuration)
        ConnectionTags.install(on: &config, numbers: numbers, logger: logger)
        if let proxy = key.proxy {
            switch proxy.kind {
            case .http:
                // AsyncHTTPClient tunnels both http and https through CONNECT; the credentials go
                // in the CONNECT request's Proxy-Authorization, never to the origin server.
                config.proxy = .server(
                    host: proxy.host, port: proxy.port,
                    authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
            case .socks5:
                config.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        return config
    }

    /// The client for `proxy` (nil: direct) and HTTP version, made on first use.
    func client(for proxy: ProxyEndpoint?, http2: Bool) throws -> HTTPClient {
        let key = ClientKey(proxy: proxy, http2: http2)
        return try clients.withLockedValue { clients in
            guard !clients.isShutDown else { throw HTTPClientError.alreadyShutdown }
            if let existing = clients.made[key] { return existing }
            let made = HTTPClient(
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: clientConfiguration(for: key))
            clients.made[key] = made
            return made
        }
    }

    /// Runs `body` with a transport of its own, shut down once `body` has returned or thrown
    /// (cancelled or not): for work that needs a transport for a while (a name of content
    /// resolved, a Metalink fetched). A client that is not shut down traps in its deinit.
    ///
    /// - Parameters:
    ///   - configuration: what the transport's clients are made with.
    ///   - logger: for what the transport cannot do but need not fail on.
    ///   - body: the work; the transport must not be kept beyond it.
    public static func withTransport<T, Failure: Error>(
        configuration: Configuration = .init(),
        logger: Logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (AsyncHTTPTransport) async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let transport = AsyncHTTPTransport(configuration: configuration, logger: logger)
        let result: Result<T, Failure>
        do throws(Failure) {
            result = .success(try await body(transport))
        } catch {
            result = .failure(error)
        }
        await transport.shutdown()
        return try result.get()
    }

    /// Whether `shutdown()` has been called: no client is made after it.
    var isShutDown: Bool { clients.withLockedValue { $0.isShutDown } }

    /// Shuts every client down, together. Each returns once its connections have closed, which
    /// (with no close_notify wait) is at once.
    public func shutdown() async {
        let made = clients.withLockedValue { clients in
            clients.isShutDown = true
            defer { clients.made = [:] }
            return Array(clients.made.values)
        }
        let logger = self.logger
        await withTaskGroup(of: Void.self) { group in
            for client in made {
                group.addTask {
                    do {
                        try await client.shutdown()
                    } catch {
                        logger.warning("an HTTP client did not shut down cleanly", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }

    /// Redirect statuses followed, as AsyncHTTPClient and curl follow them (a GET stays a GET).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// Request headers that belong to the origin they were given for.
    static let originBoundHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// Sends `plan` (a GET, or a HEAD) and follows its redirects hop by hop, each through the proxy its
    /// URL calls for; returns the final response's head (its URL, and the connections used)
    /// and its body, which the caller reads. Any status the server answers with is returned,
    /// not thrown. `Authorization`, `Cookie` and `Proxy-Authorization` of the request, and its
    /// credentials, go only to the first URL's origin; the cookie store's cookies go wherever
    /// they match.
    ///
    /// - Throws: `HaulError`, its code saying whether a retry may help: `network` for a
    ///   connection that cannot be made, a timeout or a failed TLS handshake,
    ///   `tooManyRedirects` past `maxRedirects` or on a loop, `interrupted` when cancelled,
    ///   `httpStatus` for a proxy's 407, and the code of a redirect to a URL haul cannot fetch.
    public func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
        let origin = plan.url
        let shown = origin.absoluteString
        var url = origin
        var visited: Set<String> = [url.absoluteString]
        var redirects = 0
        var uses: [ConnectionUse] = []
        while true {
            let sameOrigin = url.hasSameOrigin(as: origin)
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = plan.method == "HEAD" ? .HEAD : .GET
            var headers = plan.allHeaders
            if !sameOrigin { for name in Self.originBoundHeaders { headers.remove(name: name) } }
            for field in headers { request.headers.add(name: field.name, value: field.value) }
            if !request.headers.contains(name: "User-Agent") {
                request.headers.add(name: "User-Agent", value: configuration.userAgent)
            }
            // Preemptive Basic, as curl does with -u: only to the origin the credentials are for,
            // and never over a user's own header. Userinfo in a server's Location is never used
            // (RFC 9110 §4.2.4: an error in a received URI; wget drops it too): a server must not
            // choose the credentials sent to another host.
            if sameOrigin, let authorization = plan.authorization, !request.headers.contains(name: "Authorization") {
                request.headers.add(name: "Authorization", value: authorization)
            }
            let credentials = sameOrigin ? (plan.credentials ?? origin.credentials) : nil
            if let credentials, !request.headers.contains(name: "Authorization") {
                request.headers.add(
                    name: "Authorization",
                    value: HTTPClient.Authorization.basic(username: credentials.user, password: credentials.password)
                        .headerValue)
            }
            configuration.cookies?.add(to: &request.headers, for: url)
            // Signed at the moment of sending, to the origin the scope was given for only.
            if let scope = plan.signing, sameOrigin, let keys = configuration.awsCredentials {
                Self.sign(&request, method: plan.method, url: url, sent: headers, scope: scope, keys: keys)
            }
            let proxy = configuration.proxies.proxy(for: url)
            // HTTP/2 needs TLS: a plain http URL goes to the HTTP/1.1 client whatever the plan allows.
            let http2 = plan.allowsHTTP2 && url.scheme == "https"
            let response: HTTPClientResponse
            do {
                response = try await client(for: proxy, http2: http2).execute(request, deadline: .distantFuture)
            } catch {
                throw Self.classify(error, url: shown, proxy: proxy)
            }
            if let use = Self.connectionUse(response, tls: url.scheme == "https") { uses.append(use) }
            configuration.cookies?.receive(response.headers["Set-Cookie"], from: url)
            let status = Int(response.status.code)
            if Self.redirectStatuses.contains(status), let location = response.headers.first(name: "Location") {
                await discard(response.body)
                guard redirects < configuration.maxRedirects else {
                    throw HaulError(
                        .tooManyRedirects, "\(shown): too many redirects",
                        cause: "more than \(configuration.maxRedirects) redirects, the last to \(url.absoluteString)")
                }
                let next: RemoteURL
                do {
                    next = try url.resolving(location)
                } catch {
                    throw HaulError(
                        error.code, "\(shown): redirected to a URL haul cannot fetch: \(error.message)",
                        httpStatus: status)
                }
                guard visited.insert(next.absoluteString).inserted else {
                    throw HaulError(
                        .tooManyRedirects, "\(shown): too many redirects",
                        cause: "redirect loop at \(next.absoluteString)")
                }
                redirects += 1
                url = next
                continue
            }
            var responseHeaders = HTTPHeaderList()
            for (name, value) in response.headers where name.lowercased() != ConnectionTags.field {
                responseHeaders.add(name: name, value: value)
            }
            let head = ResponseHead(
                status: status, headers: responseHeaders, url: url.absoluteString, connections: uses)
            let framing = AsyncHTTPBody.Framing(headers: response.headers)
            return (head, AsyncHTTPBody(response.body.makeAsyncIterator(), url: shown, proxy: proxy, framing: framing))
        }
    }

    /// The connection a response came over, from the field `ConnectionTags` added; nil when it
    /// could not be tagged.
    static func connectionUse(_ response: HTTPClientResponse, tls: Bool) -> ConnectionUse? {
        guard let tag = ConnectionTags.parse(response.headers) else { return nil }
        let version =
            response.version.major >= 2
            ? "HTTP/\(response.version.major)"
            : "HTTP/\(response.version.major).\(response.version.minor)"
        return ConnectionUse(connection: tag.connection, isFirst: tag.exchange == 0, tls: tls, httpVersion: version)
    }

    /// Reads a redirect's short body so its connection can be reused; a long one is cut off (the
    /// connection then closes).
    func discard(_ body: HTTPClientResponse.Body) async {
        var read = 0
        do {
            for try await chunk in body {
                read += chunk.readableBytes
                if read > 64 << 10 { break }
            }
        } catch {
            // Nothing of it was wanted: only its connection is lost.
            logger.debug("a redirect's body broke off", metadata: ["error": "\(error)"])
        }
    }
}
