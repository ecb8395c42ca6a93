/// Where an S3 bucket's objects are asked for: AWS's regional endpoint
/// (`https://BUCKET.s3.REGION.amazonaws.com/KEY`), or a store that speaks its API
/// (`--s3-endpoint URL`: MinIO, R2, moto), with the bucket in the host (virtual-hosted style) or
/// as the path's first segment (path style: `--s3-path-style`, an endpoint given as an IP
/// address, and a bucket whose name has a `.`, which no certificate of `*.s3...` covers).
public struct S3Endpoint: Sendable, Equatable {
    /// The endpoint's scheme, host and port; nil: AWS's endpoint of the region.
    public var custom: RemoteURL?
    /// Path-style requests even where virtual-hosted ones would do.
    public var pathStyle: Bool

    /// AWS itself, each region at its own endpoint.
    public static let aws = S3Endpoint(custom: nil, pathStyle: false)

    /// An endpoint at `custom` (nil: AWS), path style when `pathStyle` or when the host is an IP
    /// address.
    public init(custom: RemoteURL?, pathStyle: Bool) {
        self.custom = custom
        self.pathStyle = pathStyle || (custom.map { RemoteURL.isIPAddress($0.host) } ?? false)
    }

    /// The URL of `key` in `bucket` (`key` empty: the bucket itself, where it is listed) in
    /// `region`, with `query` (names and values as they are; encoded here).
    public func url(bucket: String, key: String, region: String, query: [(name: String, value: String)] = [])
        throws(HaulError) -> RemoteURL
    {
        let encodedKey = key.split(separator: "/", omittingEmptySubsequences: false)
            .map { SigV4.uriEncode(String($0)) }.joined(separator: "/")
        let base: String
        let hostStyle = !pathStyle && !bucket.contains(".")
        if let custom {
            let origin = "\(custom.scheme)://\(custom.authority)"
            base =
                hostStyle
                ? "\(custom.scheme)://\(bucket).\(custom.authority)" : origin + "/" + SigV4.uriEncode(bucket)
        } else {
            let host = "s3.\(region).amazonaws.com"
            base = hostStyle ? "https://\(bucket).\(host)" : "https://\(host)/\(bucket)"
        }
        var text = base + "/" + encodedKey
        if !query.isEmpty {
            text +=
                "?" + query.map { "\(SigV4.uriEncode($0.name))=\(SigV4.uriEncode($0.value))" }.joined(separator: "&")
        }
        return try RemoteURL(text)
    }
}

extension SigV4.Request {
    /// The request `method` makes of `url`: its `Host` value (the port only when it is not the
    /// scheme's), its path as sent, its query's parameters decoded.
    public init(method: String, url: RemoteURL) {
        let host =
            url.port.map { $0 == (url.scheme == "https" ? 443 : 80) ? url.host : "\(url.host):\($0)" } ?? url.host
        var query: [(name: String, value: String)] = []
        let text = url.absoluteString
        if let mark = text.firstIndex(of: "?") {
            let rest = text[text.index(after: mark)...]
            let end = rest.firstIndex(of: "#") ?? rest.endIndex
            for pair in rest[..<end].split(separator: "&") {
                let equals = pair.firstIndex(of: "=")
                let name = pair[..<(equals ?? pair.endIndex)]
                let value = equals.map { pair[pair.index(after: $0)...] } ?? ""
                query.append(
                    (
                        String(decoding: PercentDecoding.decode(name), as: UTF8.self),
                        String(decoding: PercentDecoding.decode(value), as: UTF8.self)
                    ))
            }
        }
        self.init(method: method, host: host, path: url.path, query: query)
    }
}
