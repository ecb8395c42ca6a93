#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import HaulCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The real transport: AsyncHTTPClient, streaming. Its response body applies backpressure, so a
/// slow disk slows the socket instead of filling memory (DESIGN rule 6).
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

        public init(connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(60), maxRedirects: Int = 10,
                    additionalTrustRoots: [String] = [], maxConnectionsPerHost: Int = 1024) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.maxRedirects = maxRedirects
            self.additionalTrustRoots = additionalTrustRoots
        }
    }

    let client: HTTPClient

    public init(configuration: Configuration = .init()) {
        var config = HTTPClient.Configuration()
        config.redirectConfiguration = .follow(max: configuration.maxRedirects, allowCycles: false)
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
        self.client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: config)
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    public func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
        var request = HTTPClientRequest(url: plan.url.absoluteString)
        request.method = .GET
        for field in plan.allHeaders { request.headers.add(name: field.name, value: field.value) }
        if !request.headers.contains(name: "User-Agent") { request.headers.add(name: "User-Agent", value: "haul/0.1") }
        do {
            let response = try await client.execute(request, deadline: .distantFuture)
            var headers = HTTPHeaderList()
            for (name, value) in response.headers { headers.add(name: name, value: value) }
            let head = ResponseHead(status: Int(response.status.code), headers: headers,
                                    url: response.url?.absoluteString ?? plan.url.absoluteString)
            return (head, AsyncHTTPBody(response.body.makeAsyncIterator(), url: plan.url.absoluteString))
        } catch {
            throw Self.classify(error, url: plan.url.absoluteString)
        }
    }

    /// Names the cause in the user's terms and says whether retrying can help (via the code).
    static func classify(_ error: any Error, url: String) -> HaulError {
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
            default:
                return HaulError(.network, "\(url): \(error)", cause: "\(error)")
            }
        }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return HaulError(.network, "\(url): cannot resolve host \(error.host)", cause: "\(error)")
            }
            let reasons = error.connectionErrors.map { "\($0.error)" }.joined(separator: ", ")
            return HaulError(.network, "\(url): cannot connect to \(error.host):\(error.port)", cause: reasons)
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
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let url: String

    init(_ iterator: HTTPClientResponse.Body.AsyncIterator, url: String) {
        self.iterator = iterator
        self.url = url
    }

    func next() async throws -> (any ByteChunk)? {
        do {
            return try await iterator.next()
        } catch {
            throw AsyncHTTPTransport.classify(error, url: url)
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
