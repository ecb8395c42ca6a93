import Haul
import HaulCore
import Logging

/// `haul get --metalink URL`: the document, fetched before any download starts, as the downloads
/// themselves would fetch it: the command's transport settings (proxies and `no_proxy`,
/// `--cacert`, timeouts, user agent, the `--load-cookies` jar, whose `Set-Cookie` answers
/// `--save-cookies` then keeps), its `-H` headers and the URL's credentials (its own, `--user`,
/// netrc). Redirects are followed hop by hop by the transport, credentials and cookies only
/// where they belong.
///
/// Failures exit as a download's would: no connection is `network` (4), an error status or a
/// broken answer `http` (3). A body that is no Metalink, or larger than `Metalink.maxBytes`, is
/// a usage error (2), as for a local file.
struct MetalinkFetcher: Sendable {
    var http: AsyncHTTPTransport.Configuration
    var headers: HTTPHeaderList
    var credentials: CredentialSources
    var httpVersions: HTTPVersionPolicy
    var logger: Logger

    /// Whether a `--metalink` value names a URL rather than a file.
    static func isURL(_ text: String) -> Bool {
        text.contains("://")
    }

    func fetch(_ text: String) async throws(HaulError) -> Metalink {
        let url = try RemoteURL(text)
        let shown = url.absoluteString
        let body = try await AsyncHTTPTransport.withTransport(configuration: http, logger: logger) {
            transport throws(HaulError) in try await download(url, transport: transport)
        }
        do {
            return try Metalink.parse(String(decoding: body, as: UTF8.self))
        } catch {
            throw HaulError(.usage, "\(shown): \(error.message)")
        }
    }

    /// The body of a 2xx answer, at most `Metalink.maxBytes`.
    private func download(_ url: RemoteURL, transport: AsyncHTTPTransport) async throws(HaulError) -> [UInt8] {
        let shown = url.absoluteString
        let plan = RequestPlan(
            url: url, range: nil, ifRange: nil, headers: headers, credentials: credentials.credentials(for: url),
            allowsHTTP2: httpVersions.allowsHTTP2)
        let head: ResponseHead
        let body: any ResponseBodyStream
        do {
            (head, body) = try await transport.send(plan)
        } catch {
            throw Self.failure(error, url: shown)
        }
        guard (200..<300).contains(head.status), head.status != 206 else {
            throw HaulError(
                .httpStatus,
                "cannot fetch the Metalink \(shown): HTTP \(head.status)\(ResponseCheck.reason(head.status))",
                httpStatus: head.status)
        }
        let tooLarge = HaulError(.usage, "\(shown): larger than \(Metalink.maxBytes >> 20) MiB, not a Metalink")
        if let length = head.headers["Content-Length"].flatMap(Int64.init), length > Int64(Metalink.maxBytes) {
            throw tooLarge
        }
        var bytes: [UInt8] = []
        var exceeded = false
        do {
            while let chunk = try await body.next() {
                guard bytes.count + chunk.count <= Metalink.maxBytes else {
                    exceeded = true
                    break
                }
                chunk.withUnsafeBytes { bytes.append(contentsOf: $0) }
            }
        } catch {
            throw Self.failure(error, url: shown)
        }
        if exceeded { throw tooLarge }
        return bytes
    }

    /// A failure of the transport (already a `HaulError` naming the URL, such as "URL: cannot
    /// connect to HOST:PORT"), said to be the Metalink's.
    static func failure(_ error: any Error, url: String) -> HaulError {
        guard let error = error as? HaulError else {
            return HaulError(
                .network, "cannot fetch the Metalink \(url): \(error)", cause: String(reflecting: error),
                underlying: error)
        }
        let message = error.message.hasPrefix(url) ? error.message : "\(url): \(error.message)"
        return HaulError(
            error.code, "cannot fetch the Metalink \(message)", httpStatus: error.httpStatus, cause: error.cause)
    }
}
