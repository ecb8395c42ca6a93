import AsyncHTTPClient
import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// Names the cause in the user's terms and says whether retrying can help (via the code).
    /// `proxy` is the proxy the request went through, if any. `url` carries no credentials
    /// (``RemoteURL/absoluteString``), nor does anything else here.
    static func classify(_ error: any Error, url: String, proxy: ProxyEndpoint? = nil) -> HaulError {
        if let error = error as? HaulError { return error }
        if error is CancellationError { return HaulError(.interrupted, "\(url): stopped") }
        if let error = error as? HTTPClientError {
            switch error {
            case .redirectLimitReached, .redirectCycleDetected:
                return HaulError(.tooManyRedirects, "\(url): too many redirects", underlying: error)
            case .readTimeout:
                return HaulError(.network, "\(url): no data received before the read timeout", underlying: error)
            case .connectTimeout:
                return HaulError(.network, "\(url): connection timed out", underlying: error)
            case .remoteConnectionClosed:
                return HaulError(.network, "\(url): connection closed by the server", underlying: error)
            case .cancelled:
                return HaulError(.interrupted, "\(url): stopped")
            case .invalidURL, .emptyHost, .emptyScheme:
                return HaulError(.badURL, "\(url): \(error)", underlying: error)
            case .proxyAuthenticationRequired:
                let what = proxy?.credentials == nil ? "wants credentials" : "refused the credentials"
                return HaulError(
                    .httpStatus,
                    "\(url): the proxy \(proxy.map { "\($0)" } ?? "") \(what) (HTTP 407 Proxy Authentication Required)",
                    httpStatus: 407, underlying: error)
            case .invalidProxyResponse:
                // AsyncHTTPClient tunnels http:// through CONNECT too, and many proxies allow
                // CONNECT only to port 443; it does not tell which status the proxy answered.
                let hint =
                    proxy?.credentials == nil
                    ? "the proxy may allow CONNECT only to some ports, such as 443"
                    : "wrong proxy credentials, or the proxy allows CONNECT only to some ports, such as 443"
                return HaulError(
                    .network, "\(url): the proxy \(proxy.map { "\($0)" } ?? "") refused the CONNECT tunnel (\(hint))",
                    underlying: error)
            default:
                return HaulError(.network, "\(url): \(error)", underlying: error)
            }
        }
        if let error = error as? NIOConnectionError {
            let target =
                proxy.map {
                    $0.host == error.host && $0.port == error.port ? "the proxy \(error.host):\(error.port)" : nil
                }
                ?? nil
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return HaulError(.network, "\(url): cannot resolve host \(target ?? error.host)", underlying: error)
            }
            let reasons = error.connectionErrors.map { "\($0.error)" }.joined(separator: ", ")
            return HaulError(
                .network, "\(url): cannot connect to \(target ?? "\(error.host):\(error.port)")", cause: reasons)
        }
        if let error = error as? IOError {
            return HaulError(.network, "\(url): \(String(cString: strerror(error.errnoCode)))", underlying: error)
        }
        if let error = error as? NIOSSLError {
            let detail =
                "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
                ? "handshake failed: the server's certificate is not trusted" : "handshake failed"
            return HaulError(.network, "\(url): TLS \(detail)", underlying: error)
        }
        return HaulError(.network, "\(url): \(error)", cause: String(reflecting: error), underlying: error)
    }
}

/// The body of one response. Read by one runner, in order.
final class AsyncHTTPBody: ResponseBodyStream, @unchecked Sendable {
    /// How the response said its body ends: what a failure in the middle of it means.
    enum Framing: Hashable {
        case chunked
        case length(Int64)
        /// Read until the connection closes (HTTP/1.0 style): an early close cannot be told apart.
        case close

        init(headers: HTTPHeaders) {
            if headers[canonicalForm: "Transfer-Encoding"].contains(where: { $0.lowercased() == "chunked" }) {
                self = .chunked
            } else if let length = headers.first(name: "Content-Length").flatMap({ Int64($0) }) {
                self = .length(length)
            } else {
                self = .close
            }
        }
    }

    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let url: String
    private let proxy: ProxyEndpoint?
    private let framing: Framing
    private var read: Int64 = 0

    init(
        _ iterator: HTTPClientResponse.Body.AsyncIterator, url: String, proxy: ProxyEndpoint? = nil,
        framing: Framing = .close
    ) {
        self.iterator = iterator
        self.url = url
        self.proxy = proxy
        self.framing = framing
    }

    func next() async throws -> (any ByteChunk)? {
        do {
            let chunk = try await iterator.next()
            read += Int64(chunk?.readableBytes ?? 0)
            return chunk.map(Self.compacted)
        } catch {
            throw AsyncHTTPTransport.classifyBody(error, url: url, proxy: proxy, framing: framing, read: read)
        }
    }
}

extension AsyncHTTPBody {
    /// A chunk whose storage is more than twice its bytes, copied into storage of its own size.
    ///
    /// The writer keeps chunks until their batch is on disk, and a chunk pins its whole storage.
    /// Over TLS a chunk is a slice of the TLS handler's plaintext buffer, which grows to hold a
    /// whole network read and is copied at that capacity whenever it is written again while a
    /// slice of it is held: with 64 TLS connections the chunks the writer held (about 2 MiB of
    /// bytes) pinned 90 MB of such storage (heaptrack's peak). A copy costs one `memcpy` of bytes
    /// that were just decrypted; a chunk that fills most of its storage (a plain HTTP read) is
    /// passed on as it is.
    static func compacted(_ chunk: ByteBuffer) -> ByteBuffer {
        guard chunk.storageCapacity > 2 * chunk.readableBytes else { return chunk }
        var copy = ByteBufferAllocator().buffer(capacity: chunk.readableBytes)
        copy.writeImmutableBuffer(chunk)
        return copy
    }
}

extension AsyncHTTPTransport {
    /// A body that failed after `read` bytes: a server that broke the body's framing or closed
    /// the connection before its announced end is named in words (the parser's own text, such as
    /// "invalid constant string", tells a user nothing). Other failures are classified as any.
    static func classifyBody(
        _ error: any Error, url: String, proxy: ProxyEndpoint?, framing: AsyncHTTPBody.Framing,
        read: Int64
    ) -> HaulError {
        let cause = "\(error)"
        let closedEarly: Bool
        if let parser = error as? HTTPParserError {
            switch parser {
            case .invalidEOFState, .closedConnection:
                closedEarly = true
            case .invalidChunkSize:
                return HaulError(
                    .brokenFraming,
                    "\(url): the server broke chunked encoding: a chunk size that is not a "
                        + "hexadecimal number or is too large, after \(read) bytes", cause: cause)
            default:
                let what = framing == .chunked ? "broke chunked encoding" : "broke HTTP framing"
                return HaulError(
                    .brokenFraming, "\(url): the server \(what): malformed bytes after \(read) bytes of the body",
                    cause: cause)
            }
        } else if let client = error as? HTTPClientError, client == .remoteConnectionClosed {
            closedEarly = true
        } else {
            closedEarly = false
        }
        guard closedEarly else { return classify(error, url: url, proxy: proxy) }
        switch framing {
        case .chunked:
            return HaulError(
                .badResponse,
                "\(url): the server closed the connection after \(read) bytes, inside its chunked "
                    + "body (no last chunk)", cause: cause)
        case .length(let length):
            return HaulError(
                .badResponse,
                "\(url): the server closed the connection after \(read) of the \(length) bytes "
                    + "its Content-Length announced", cause: cause)
        case .close:
            return classify(error, url: url, proxy: proxy)
        }
    }
}

extension ByteBuffer: ByteChunk {
    /// The readable bytes, the only ones a chunk holds.
    public var count: Int { readableBytes }

    /// The readable bytes at `range`, counted from the reader index, sharing this buffer's
    /// storage. `range` must lie within `count`.
    public func slice(_ range: Range<Int>) -> ByteBuffer {
        getSlice(at: readerIndex + range.lowerBound, length: range.count)!
    }

    /// Calls `body` with the readable bytes, without copying them.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeReadableBytes(body)
    }
}
