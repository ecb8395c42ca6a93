import AsyncHTTPClient
import HaulCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How the transport names a failure in the user's terms: which `HaulError` code (and so
/// whether a retry may help) a failed request or a body cut short becomes.
extension AsyncHTTPTransport {
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
