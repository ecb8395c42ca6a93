import AsyncHTTPClient
import HaulCore
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The transport's signing step (`RequestPlan.signing`): AWS Signature Version 4 added to a
/// request as it goes out, with the transport's keys and the clock of that moment, so a resume
/// months later is signed as freshly as the first request and nothing stored holds a signature.
extension AsyncHTTPTransport {
    /// Adds `Host`, `x-amz-date`, `x-amz-content-sha256`, the session token and `Authorization`
    /// to `request` for `url`, signing every `x-amz-*` field among `sent` (S3 requires it).
    static func sign(
        _ request: inout HTTPClientRequest, method: String, url: RemoteURL, sent: HTTPHeaderList, scope: SigV4Scope,
        keys: SigV4.Credentials
    ) {
        var signed = SigV4.Request(method: method, url: url)
        signed.headers = sent.fields.filter { $0.name.lowercased().hasPrefix("x-amz-") }.map {
            (name: $0.name, value: $0.value)
        }
        let signer = SigV4(credentials: keys, region: scope.region, service: scope.service, primitives: .crypto)
        request.headers.replaceOrAdd(name: "Host", value: signed.host)
        for field in signer.signatureHeaders(for: signed, at: Int64(time(nil))) {
            request.headers.replaceOrAdd(name: field.name, value: field.value)
        }
    }
}
