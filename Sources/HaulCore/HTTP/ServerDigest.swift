/// A digest of the whole representation that a server announced with a response: RFC 9530's
/// `Repr-Digest` (sha-256, sha-512), its `Content-Digest` where the content is the whole
/// representation (a 200 without `Content-Encoding`), or RFC 3230's older `Digest` (SHA-512,
/// SHA-256, SHA, MD5). A finished download is checked against it before it is published, unless
/// the request carries its own checksum (`DownloadRecord.expectedDigest`).
///
/// Parsing is forgiving in one way only: whatever cannot be read (a malformed field, an unknown
/// algorithm, a value of the wrong length) is ignored, never an error; the download then goes on
/// as if the server had sent no digest for it.
public struct ServerDigest: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The header field a digest came from, in the order preferred when two carry the same
    /// algorithm.
    public enum Field: String, Hashable, Codable, Sendable, CaseIterable {
        /// `Repr-Digest` (RFC 9530): of the whole representation, whatever part a response carries.
        case reprDigest = "Repr-Digest"
        /// `Content-Digest` (RFC 9530): of the content sent, used only when that is the whole
        /// representation.
        case contentDigest = "Content-Digest"
        /// `Digest` (RFC 3230), the older field: of the whole representation.
        case digest = "Digest"
    }

    /// The algorithm and the digest's value.
    public var checksum: Checksum
    /// The header field it came from.
    public var field: Field

    /// The digest `checksum`, as a server announced it in `field`.
    public init(_ checksum: Checksum, from field: Field) {
        self.checksum = checksum
        self.field = field
    }

    /// `sha-256 from Repr-Digest`.
    public var description: String { "\(checksum.algorithm.rawValue) from \(field.rawValue)" }

    // MARK: What a response announces

    /// Every readable digest of the whole representation in a response. `Repr-Digest` and
    /// `Digest` describe the whole representation whatever part a 206 carries; `Content-Digest`
    /// describes the content, which is the representation only in a 200 without a content
    /// coding (a 206's is of its part: ignored).
    public static func announced(in head: ResponseHead) -> [ServerDigest] {
        var found = structured(values(of: "Repr-Digest", in: head.headers), field: .reprDigest)
        let encoding = head.headers["Content-Encoding"]?.lowercased()
        if head.status == 200, encoding == nil || encoding == "identity" || encoding == "" {
            found += structured(values(of: "Content-Digest", in: head.headers), field: .contentDigest)
        }
        found += legacy(values(of: "Digest", in: head.headers))
        return found
    }

    /// The one worth checking: the strongest algorithm, then the preferred field.
    public static func best(_ digests: [ServerDigest]) -> ServerDigest? {
        digests.max { lhs, rhs in
            if lhs.checksum.algorithm.strength != rhs.checksum.algorithm.strength {
                return lhs.checksum.algorithm.strength < rhs.checksum.algorithm.strength
            }
            return lhs.field.rank > rhs.field.rank
        }
    }

    /// What a download that knows `known` makes of a response announcing `announced`.
    public enum Reconciled: Hashable, Sendable {
        /// Nothing new, or nothing stronger than what is known.
        case keep
        /// Learn this one (nothing was known, or this one is of a stronger algorithm).
        case take(ServerDigest)
        /// The same algorithm with another value: this response describes another entity.
        case conflict(known: ServerDigest, announced: ServerDigest)
    }

    /// Digests of different algorithms cannot be compared; two of the same algorithm must agree.
    public static func reconcile(known: ServerDigest?, announced: [ServerDigest]) -> Reconciled {
        if let known,
            let other = announced.first(where: {
                $0.checksum.algorithm == known.checksum.algorithm && $0.checksum.hex != known.checksum.hex
            })
        {
            return .conflict(known: known, announced: other)
        }
        guard let best = best(announced) else { return .keep }
        guard let known else { return .take(best) }
        return best.checksum.algorithm.strength > known.checksum.algorithm.strength ? .take(best) : .keep
    }

    // MARK: Parsing

    /// Every line of a field joined as one list (RFC 9110 5.3), nil when there is none.
    static func values(of name: String, in headers: HTTPHeaderList) -> String? {
        let lowered = name.lowercased()
        let lines = headers.fields.filter { $0.name.lowercased() == lowered }.map(\.value)
        return lines.isEmpty ? nil : lines.joined(separator: ", ")
    }

    /// `sha-256=:BASE64:, sha-512=:BASE64:`: an RFC 8941 dictionary whose sha-256 and sha-512
    /// members are byte sequences (RFC 9530). A field that is not a valid dictionary is ignored
    /// whole, as RFC 8941 says; other keys are skipped.
    public static func structured(_ value: String?, field: Field) -> [ServerDigest] {
        guard let value, let members = StructuredDictionary.parse(value) else { return [] }
        var found: [Checksum.Algorithm: ServerDigest] = [:]
        for (key, bytes) in members {
            let algorithm: Checksum.Algorithm
            switch key {
            case "sha-256": algorithm = .sha256
            case "sha-512": algorithm = .sha512
            default: continue
            }
            guard let bytes, bytes.count == algorithm.byteCount else { continue }
            // A key given twice: the last one counts (RFC 8941 4.2.2).
            found[algorithm] = ServerDigest(Checksum(algorithm: algorithm, hex: hex(bytes)), from: field)
        }
        return found.values.sorted { $0.checksum.algorithm.strength > $1.checksum.algorithm.strength }
    }

    /// `SHA-256=BASE64, MD5=BASE64` (RFC 3230, algorithm names in any case): SHA-512, SHA-256,
    /// SHA (sha-1) and MD5; a member that cannot be read is skipped.
    public static func legacy(_ value: String?) -> [ServerDigest] {
        guard let value else { return [] }
        var found: [ServerDigest] = []
        for member in value.split(separator: ",") {
            guard let equals = member.firstIndex(of: "=") else { continue }
            let algorithm: Checksum.Algorithm
            switch member[..<equals].trimmingSpaces().lowercased() {
            case "sha-512": algorithm = .sha512
            case "sha-256": algorithm = .sha256
            case "sha": algorithm = .sha1
            case "md5": algorithm = .md5
            default: continue
            }
            let encoded = member[member.index(after: equals)...].trimmingSpaces()
            guard let bytes = Base64.decode(encoded.utf8), bytes.count == algorithm.byteCount,
                !found.contains(where: { $0.checksum.algorithm == algorithm })
            else { continue }
            found.append(ServerDigest(Checksum(algorithm: algorithm, hex: hex(bytes)), from: .digest))
        }
        return found
    }

    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension ServerDigest.Field {
    /// Lower is preferred.
    var rank: Int {
        switch self {
        case .reprDigest: 0
        case .contentDigest: 1
        case .digest: 2
        }
    }
}

/// The digest a finished download is checked against, and where it came from.
public struct ExpectedDigest: Hashable, Sendable, CustomStringConvertible {
    /// Where an expected digest comes from.
    public enum Origin: Hashable, Sendable {
        /// The request's own checksum (`haul get --checksum`, the API's and aria2's `checksum`).
        case request
        /// A digest the server announced (`DownloadRecord.serverDigest`).
        case server(ServerDigest.Field)

        /// `checksum`, or the header field's name.
        public var name: String {
            switch self {
            case .request: "checksum"
            case .server(let field): field.rawValue
            }
        }
    }

    /// The digest the file must have.
    public var checksum: Checksum
    /// Where the digest came from, which decides the error of a mismatch: `checksumMismatch` for the
    /// request's, `digestMismatch` for a server's.
    public var origin: Origin

    /// The digest `checksum`, expected because of `origin`.
    public init(_ checksum: Checksum, from origin: Origin) {
        self.checksum = checksum
        self.origin = origin
    }

    /// `sha-256 from Repr-Digest`, `sha-256 from checksum`.
    public var description: String { "\(checksum.algorithm.rawValue) from \(origin.name)" }
}

extension DownloadRecord {
    /// What the finished file is checked against: the request's checksum wins when it has one
    /// (the server's digest is then not checked: the user's word is the one that counts, and a
    /// file the user vouched for is not refused because a server says otherwise); else the
    /// digest the server announced, unless the file is only a range of the representation it
    /// describes.
    public var expectedDigest: ExpectedDigest? {
        if let checksum = request.checksum { return ExpectedDigest(checksum, from: .request) }
        guard request.range == nil, let serverDigest else { return nil }
        return ExpectedDigest(serverDigest.checksum, from: .server(serverDigest.field))
    }
}

/// Base64 as digests and structured fields carry it (decoding only: the transport's
/// `Authorization: Basic` is encoded by AsyncHTTPClient).
enum Base64 {
    /// Standard base64 (RFC 4648 section 4), `=` padding optional (RFC 8941 4.2.7 asks parsers
    /// not to insist on it). Nil for any other character, data after padding, or an impossible
    /// length.
    static func decode<Bytes: Sequence>(_ text: Bytes) -> [UInt8]? where Bytes.Element == UInt8 {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        var characters = 0
        var padding = 0
        for character in text {
            if character == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, let value = value(of: character) else { return nil }
            characters += 1
            buffer = (buffer << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        guard characters % 4 != 1, padding <= 2, padding == 0 || (characters + padding) % 4 == 0 else { return nil }
        return output
    }

    static func value(of character: UInt8) -> UInt32? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(character - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(character - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(character - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
