#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import HaulCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The real transport: AsyncHTTPClient, streaming. Its response body applies backpressure, so a
/// slow disk slows the socket instead of filling memory (DESIGN rule 6).
///
/// Proxies: AsyncHTTPClient's proxy is a property of the whole client, so there is one client per
/// proxy endpoint (and one for direct connections), made when first needed. Redirects are
/// followed here, not by AsyncHTTPClient, so that each hop goes through the proxy its own URL
/// calls for (`no_proxy` may differ between hosts) and credentials go only to the origin
/// they were given for.
public final class AsyncHTTPTransport: HTTPTransport {
    public struct Configuration: Sendable, Hashable {
        public var connectTimeout: Duration
        /// No byte for this long means the connection is dead; the download retries.
        public var readTimeout: Duration
        public var maxRedirects: Int
        /// PEM files of certificate authorities to trust besides the system's (a private CA).
        public var additionalTrustRoots: [String]
        /// Connections open to one host at once, over all downloads.
        public var maxConnectionsPerHost: Int
        /// Which proxy each URL goes through.
        public var proxies: ProxySettings
        /// Sent unless the request's own headers name one.
        public var userAgent: String

        public init(connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(60), maxRedirects: Int = 10,
                    additionalTrustRoots: [String] = [], maxConnectionsPerHost: Int = 1024,
                    proxies: ProxySettings = .direct, userAgent: String = HaulVersion.userAgent) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.maxRedirects = maxRedirects
            self.additionalTrustRoots = additionalTrustRoots
            self.proxies = proxies
            self.userAgent = userAgent
        }
    }

    public let configuration: Configuration
    /// The client for direct connections.
    let client: HTTPClient
    private struct Clients {
        var byProxy: [ProxyEndpoint: HTTPClient] = [:]
        var isShutDown = false
    }
    private let proxied = NIOLockedValueBox(Clients())

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        self.client = Self.makeClient(configuration, proxy: nil)
    }

    static func makeClient(_ configuration: Configuration, proxy: ProxyEndpoint?) -> HTTPClient {
        var config = HTTPClient.Configuration()
        // Followed by `send`, hop by hop (see the type's comment).
        config.redirectConfiguration = .disallow
        config.timeout = .init(connect: .init(configuration.connectTimeout), read: .init(configuration.readTimeout))
        config.decompression = .disabled
        // HTTP/1.1: with HTTP/2 every connection of a segmented download would share one TCP
        // connection, and one slow stream would slow them all.
        config.httpVersion = .http1Only
        // The default of 8 per host would queue the 9th download (or connection) silently
        // inside the client while it shows as running.
        config.connectionPool = .init(idleTimeout: .seconds(60),
                                      concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.maxConnectionsPerHost)
        if !configuration.additionalTrustRoots.isEmpty {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = configuration.additionalTrustRoots.map { .file($0) }
            config.tlsConfiguration = tls
        }
        if let proxy {
            switch proxy.kind {
            case .http:
                // AsyncHTTPClient tunnels both http and https through CONNECT; the credentials go
                // in the CONNECT request's Proxy-Authorization, never to the origin server.
                config.proxy = .server(host: proxy.host, port: proxy.port,
                                       authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
            case .socks5:
                config.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: config)
    }

    /// The client for `proxy` (nil: direct), made on first use.
    func client(for proxy: ProxyEndpoint?) throws -> HTTPClient {
        guard let proxy else { return client }
        return try proxied.withLockedValue { clients in
            guard !clients.isShutDown else { throw HTTPClientError.alreadyShutdown }
            if let existing = clients.byProxy[proxy] { return existing }
            let made = Self.makeClient(configuration, proxy: proxy)
            clients.byProxy[proxy] = made
            return made
        }
    }

    public func shutdown() async {
        let others = proxied.withLockedValue { clients in
            clients.isShutDown = true
            defer { clients.byProxy = [:] }
            return Array(clients.byProxy.values)
        }
        for other in others { try? await other.shutdown() }
        try? await client.shutdown()
    }

    /// Redirect statuses followed, as AsyncHTTPClient and curl follow them (a GET stays a GET).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// Request headers that belong to the origin they were given for.
    static let originBoundHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    public func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
        let origin = plan.url
        let shown = origin.absoluteString
        var url = origin
        var visited: Set<String> = [url.absoluteString]
        var redirects = 0
        while true {
            let sameOrigin = url.hasSameOrigin(as: origin)
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .GET
            var headers = plan.allHeaders
            if !sameOrigin { for name in Self.originBoundHeaders { headers.remove(name: name) } }
            for field in headers { request.headers.add(name: field.name, value: field.value) }
            if !request.headers.contains(name: "User-Agent") { request.headers.add(name: "User-Agent", value: configuration.userAgent) }
            // Preemptive Basic, as curl does with -u: only to the origin the credentials are for,
            // and never over a user's own header. Userinfo in a server's Location is never used
            // (RFC 9110 §4.2.4: an error in a received URI; wget drops it too): a server must not
            // choose the credentials sent to another host.
            let credentials = sameOrigin ? (plan.credentials ?? origin.credentials) : nil
            if let credentials, !request.headers.contains(name: "Authorization") {
                request.headers.add(name: "Authorization", value: credentials.basicAuthorization)
            }
            let proxy = configuration.proxies.proxy(for: url)
            let response: HTTPClientResponse
            do {
                response = try await client(for: proxy).execute(request, deadline: .distantFuture)
            } catch {
                throw Self.classify(error, url: shown, proxy: proxy)
            }
            let status = Int(response.status.code)
            if Self.redirectStatuses.contains(status), let location = response.headers.first(name: "Location") {
                await Self.discard(response.body)
                guard redirects < configuration.maxRedirects else {
                    throw HaulError(.tooManyRedirects, "\(shown): too many redirects",
                                    cause: "more than \(configuration.maxRedirects) redirects, the last to \(url.absoluteString)")
                }
                let next: RemoteURL
                do {
                    next = try url.resolving(location)
                } catch {
                    throw HaulError(error.code, "\(shown): redirected to a URL haul cannot fetch: \(error.message)", httpStatus: status)
                }
                guard visited.insert(next.absoluteString).inserted else {
                    throw HaulError(.tooManyRedirects, "\(shown): too many redirects", cause: "redirect loop at \(next.absoluteString)")
                }
                redirects += 1
                url = next
                continue
            }
            var responseHeaders = HTTPHeaderList()
            for (name, value) in response.headers { responseHeaders.add(name: name, value: value) }
            let head = ResponseHead(status: status, headers: responseHeaders, url: url.absoluteString)
            let framing = AsyncHTTPBody.Framing(headers: response.headers)
            return (head, AsyncHTTPBody(response.body.makeAsyncIterator(), url: shown, proxy: proxy, framing: framing))
        }
    }

    /// Reads a redirect's short body so its connection can be reused; a long one is cut off (the
    /// connection then closes).
    static func discard(_ body: HTTPClientResponse.Body) async {
        var read = 0
        do {
            for try await chunk in body {
                read += chunk.readableBytes
                if read > 64 << 10 { break }
            }
        } catch {}
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
                return HaulError(.tooManyRedirects, "\(url): too many redirects", cause: "\(error)")
            case .readTimeout:
                return HaulError(.network, "\(url): no data received before the read timeout", cause: "\(error)")
            case .connectTimeout:
                return HaulError(.network, "\(url): connection timed out", cause: "\(error)")
            case .remoteConnectionClosed:
                return HaulError(.network, "\(url): connection closed by the server", cause: "\(error)")
            case .cancelled:
                return HaulError(.interrupted, "\(url): stopped")
            case .invalidURL, .emptyHost, .emptyScheme:
                return HaulError(.badURL, "\(url): \(error)", cause: "\(error)")
            case .proxyAuthenticationRequired:
                let what = proxy?.credentials == nil ? "wants credentials" : "refused the credentials"
                return HaulError(.httpStatus, "\(url): the proxy \(proxy.map { "\($0)" } ?? "") \(what) (HTTP 407 Proxy Authentication Required)",
                                 httpStatus: 407, cause: "\(error)")
            case .invalidProxyResponse:
                // AsyncHTTPClient tunnels http:// through CONNECT too, and many proxies allow
                // CONNECT only to port 443; it does not tell which status the proxy answered.
                let hint = proxy?.credentials == nil
                    ? "the proxy may allow CONNECT only to some ports, such as 443"
                    : "wrong proxy credentials, or the proxy allows CONNECT only to some ports, such as 443"
                return HaulError(.network, "\(url): the proxy \(proxy.map { "\($0)" } ?? "") refused the CONNECT tunnel (\(hint))",
                                 cause: "\(error)")
            default:
                return HaulError(.network, "\(url): \(error)", cause: "\(error)")
            }
        }
        if let error = error as? NIOConnectionError {
            let target = proxy.map { $0.host == error.host && $0.port == error.port ? "the proxy \(error.host):\(error.port)" : nil }
                ?? nil
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return HaulError(.network, "\(url): cannot resolve host \(target ?? error.host)", cause: "\(error)")
            }
            let reasons = error.connectionErrors.map { "\($0.error)" }.joined(separator: ", ")
            return HaulError(.network, "\(url): cannot connect to \(target ?? "\(error.host):\(error.port)")", cause: reasons)
        }
        if let error = error as? IOError {
            return HaulError(.network, "\(url): \(String(cString: strerror(error.errnoCode)))", cause: "\(error)")
        }
        if let error = error as? NIOSSLError {
            let detail = "\(error)".contains("CERTIFICATE_VERIFY_FAILED") ? "handshake failed: the server's certificate is not trusted" : "handshake failed"
            return HaulError(.network, "\(url): TLS \(detail)", cause: "\(error)")
        }
        return HaulError(.network, "\(url): \(error)", cause: String(reflecting: error))
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

    init(_ iterator: HTTPClientResponse.Body.AsyncIterator, url: String, proxy: ProxyEndpoint? = nil, framing: Framing = .close) {
        self.iterator = iterator
        self.url = url
        self.proxy = proxy
        self.framing = framing
    }

    func next() async throws -> (any ByteChunk)? {
        do {
            let chunk = try await iterator.next()
            read += Int64(chunk?.readableBytes ?? 0)
            return chunk
        } catch {
            throw AsyncHTTPTransport.classifyBody(error, url: url, proxy: proxy, framing: framing, read: read)
        }
    }
}

extension AsyncHTTPTransport {
    /// A body that failed after `read` bytes: a server that broke the body's framing or closed
    /// the connection before its announced end is named in words (the parser's own text, such as
    /// "invalid constant string", tells a user nothing). Other failures are classified as any.
    static func classifyBody(_ error: any Error, url: String, proxy: ProxyEndpoint?, framing: AsyncHTTPBody.Framing,
                             read: Int64) -> HaulError {
        let cause = "\(error)"
        let closedEarly: Bool
        if let parser = error as? HTTPParserError {
            switch parser {
            case .invalidEOFState, .closedConnection:
                closedEarly = true
            case .invalidChunkSize:
                return HaulError(.brokenFraming, "\(url): the server broke chunked encoding: a chunk size that is not a "
                    + "hexadecimal number or is too large, after \(read) bytes", cause: cause)
            default:
                let what = framing == .chunked ? "broke chunked encoding" : "broke HTTP framing"
                return HaulError(.brokenFraming, "\(url): the server \(what): malformed bytes after \(read) bytes of the body",
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
            return HaulError(.badResponse, "\(url): the server closed the connection after \(read) bytes, inside its chunked "
                + "body (no last chunk)", cause: cause)
        case .length(let length):
            return HaulError(.badResponse, "\(url): the server closed the connection after \(read) of the \(length) bytes "
                + "its Content-Length announced", cause: cause)
        case .close:
            return classify(error, url: url, proxy: proxy)
        }
    }
}

extension ByteBuffer: ByteChunk {
    public var count: Int { readableBytes }

    public func slice(_ range: Range<Int>) -> ByteBuffer {
        getSlice(at: readerIndex + range.lowerBound, length: range.count)!
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeReadableBytes(body)
    }
}
