/// AWS Signature Version 4, as S3 and the stores that copy it check it: the canonical request,
/// the string to sign and the signature, for a request signed in its headers or for a presigned
/// URL (the signature in its query). Pure: the caller gives the time and the two hash functions
/// (HaulCore imports no cryptography; `Haul` passes swift-crypto's).
///
/// The steps are those of AWS's "Signature Version 4 signing process"; the tests check them
/// against the worked examples AWS publishes for S3.
public struct SigV4: Sendable {
    /// An access key, its secret and, for temporary credentials, the session token.
    public struct Credentials: Sendable, Hashable {
        /// The access key id (`AKIA...`, or `ASIA...` for temporary credentials).
        public var accessKeyID: String
        /// The secret access key.
        public var secretAccessKey: String
        /// The session token of temporary credentials, sent as `x-amz-security-token`.
        public var sessionToken: String?

        /// Credentials from their parts.
        public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    /// SHA-256 and HMAC-SHA-256, supplied by the caller.
    public struct Primitives: Sendable {
        /// The SHA-256 digest of a message.
        public var sha256: @Sendable ([UInt8]) -> [UInt8]
        /// HMAC-SHA-256 of a message (second argument) under a key (first argument).
        public var hmacSHA256: @Sendable ([UInt8], [UInt8]) -> [UInt8]

        /// Primitives from the two functions.
        public init(
            sha256: @escaping @Sendable ([UInt8]) -> [UInt8],
            hmacSHA256: @escaping @Sendable ([UInt8], [UInt8]) -> [UInt8]
        ) {
            self.sha256 = sha256
            self.hmacSHA256 = hmacSHA256
        }
    }

    /// One request to sign: the method, the host, the path as sent (already percent-encoded, as
    /// `RemoteURL` keeps it), its query parameters (decoded) and the headers to sign besides
    /// `host` and the `x-amz-*` ones signing adds.
    public struct Request: Sendable, Equatable {
        /// `GET`, `HEAD`, ...
        public var method: String
        /// The `Host` header's value: the host, with the port when it is not the scheme's.
        public var host: String
        /// The path, percent-encoded as it goes on the wire, `/` for none.
        public var path: String
        /// The query's parameters, decoded, in any order.
        public var query: [(name: String, value: String)]
        /// Other headers to sign (a `Range`, say), in any order and case.
        public var headers: [(name: String, value: String)]

        /// A request from its parts.
        public init(
            method: String, host: String, path: String, query: [(name: String, value: String)] = [],
            headers: [(name: String, value: String)] = []
        ) {
            self.method = method
            self.host = host
            self.path = path.isEmpty ? "/" : path
            self.query = query
            self.headers = headers
        }

        /// Equal when every part is, in the same order.
        public static func == (left: Request, right: Request) -> Bool {
            left.method == right.method && left.host == right.host && left.path == right.path
                && left.query.elementsEqual(right.query, by: { $0 == $1 })
                && left.headers.elementsEqual(right.headers, by: { $0 == $1 })
        }
    }

    /// The payload hash S3 takes for a request whose body is not signed.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// The SHA-256 of no bytes: the payload hash of a `GET`.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The longest a presigned URL may last: 7 days.
    public static let maximumExpiry: Int64 = 7 * 24 * 3600

    /// Whose key signs.
    public var credentials: Credentials
    /// The region of the scope (`us-east-1`, ...).
    public var region: String
    /// The service of the scope: `s3`.
    public var service: String
    /// The hash functions.
    public var primitives: Primitives

    /// A signer for `credentials` in `region` and `service`.
    public init(credentials: Credentials, region: String, service: String = "s3", primitives: Primitives) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.primitives = primitives
    }

    /// The headers that sign `request` at `time` (seconds since 1970, UTC): `x-amz-date`,
    /// `x-amz-content-sha256`, `x-amz-security-token` with temporary credentials, and
    /// `Authorization`. The request must then be sent with exactly its own headers and these.
    public func signatureHeaders(
        for request: Request, at time: Int64, payloadHash: String = SigV4.emptyPayloadHash
    ) -> [(name: String, value: String)] {
        let stamp = AMZDate(secondsSince1970: time)
        var added: [(name: String, value: String)] = [
            ("x-amz-content-sha256", payloadHash), ("x-amz-date", stamp.dateTime),
        ]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        var signed = request
        signed.headers += added
        let canonical = Self.canonicalRequest(signed, payloadHash: payloadHash)
        let signature = self.signature(of: canonical.text, at: stamp)
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope(at: stamp)),"
            + "SignedHeaders=\(canonical.signedHeaders),Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// The query parameters that presign `request` at `time` for `expires` seconds (at most
    /// `maximumExpiry`): `X-Amz-Algorithm` ... `X-Amz-Signature`, to add to its own. Only the
    /// host is signed among the headers, so the URL works with any `Range`.
    public func presignedQuery(
        for request: Request, at time: Int64, expires: Int64
    ) -> [(name: String, value: String)] {
        let stamp = AMZDate(secondsSince1970: time)
        var added: [(name: String, value: String)] = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(at: stamp))"),
            ("X-Amz-Date", stamp.dateTime),
            ("X-Amz-Expires", String(min(max(1, expires), Self.maximumExpiry))),
        ]
        if let token = credentials.sessionToken { added.append(("X-Amz-Security-Token", token)) }
        added.append(("X-Amz-SignedHeaders", "host"))
        var signed = request
        signed.headers = []
        signed.query += added
        let canonical = Self.canonicalRequest(signed, payloadHash: Self.unsignedPayload)
        return added + [("X-Amz-Signature", signature(of: canonical.text, at: stamp))]
    }

    /// The credential scope: `DATE/REGION/SERVICE/aws4_request`.
    func scope(at stamp: AMZDate) -> String {
        "\(stamp.date)/\(region)/\(service)/aws4_request"
    }

    /// The string to sign for a canonical request.
    func stringToSign(_ canonicalRequest: String, at stamp: AMZDate) -> String {
        "AWS4-HMAC-SHA256\n\(stamp.dateTime)\n\(scope(at: stamp))\n"
            + ServerDigest.hex(primitives.sha256(Array(canonicalRequest.utf8)))
    }

    /// The signature: HMAC of the string to sign under the key derived for the day, the region
    /// and the service.
    func signature(of canonicalRequest: String, at stamp: AMZDate) -> String {
        let hmac = primitives.hmacSHA256
        var key = hmac(Array("AWS4\(credentials.secretAccessKey)".utf8), Array(stamp.date.utf8))
        for part in [region, service, "aws4_request"] { key = hmac(key, Array(part.utf8)) }
        return ServerDigest.hex(hmac(key, Array(stringToSign(canonicalRequest, at: stamp).utf8)))
    }

    /// The canonical request and its list of signed headers.
    static func canonicalRequest(_ request: Request, payloadHash: String) -> (text: String, signedHeaders: String) {
        let query = request.query.map { (name: uriEncode($0.name), value: uriEncode($0.value)) }
            .sorted { $0.name != $1.name ? $0.name < $1.name : $0.value < $1.value }
            .map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        var headers: [String: [String]] = ["host": [request.host]]
        for (name, value) in request.headers {
            headers[name.lowercased(), default: []].append(collapsingSpaces(value))
        }
        let names = headers.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(headers[$0, default: []].joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [request.method, canonicalPath(request.path), query, canonicalHeaders, signedHeaders, payloadHash]
            .joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The path as S3 signs it: each segment decoded, then encoded once with `uriEncode` (so
    /// `(1)` and `%281%29` sign alike); the slashes kept.
    static func canonicalPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { uriEncode(String(decoding: PercentDecoding.decode($0), as: UTF8.self)) }
            .joined(separator: "/")
    }

    /// Percent-encoding as SigV4 wants it: every byte but `A-Z a-z 0-9 - _ . ~` as `%XX`, upper
    /// case hex.
    static func uriEncode(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A header value trimmed, each run of spaces inside it one space.
    static func collapsingSpaces(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }
}

/// A time as SigV4 writes it: `20130524T000000Z`, and its day `20130524`.
struct AMZDate: Equatable {
    /// `YYYYMMDD'T'HHMMSS'Z'`.
    let dateTime: String
    /// `YYYYMMDD`.
    var date: String { String(dateTime.prefix(8)) }

    init(secondsSince1970 time: Int64) {
        // `2013-05-24T00:00:00Z` without its separators.
        dateTime = HTTPDate.iso8601(time).filter { $0 != "-" && $0 != ":" }
    }
}
