import Crypto
import Foundation

/// A payload's digests, computed a MiB at a time, for the tests that give a server's digest or
/// a `--checksum` (engine and end-to-end tests alike).
extension Payload {
    /// The payload's digest.
    public func digest<H: HashFunction>(_: H.Type) -> H.Digest {
        var hasher = H()
        var offset: Int64 = 0
        while offset < length {
            let end = min(length, offset + 1 << 20)
            hasher.update(data: bytes(offset..<end))
            offset = end
        }
        return hasher.finalize()
    }

    /// The payload's sha-256 in lowercase hex.
    public var sha256: String {
        digest(SHA256.self).map { String(format: "%02x", $0) }.joined()
    }

    /// The payload's digest in base64, as a server sends it in `Repr-Digest` or `Digest`.
    public func base64Digest<H: HashFunction>(_ function: H.Type) -> String {
        Data(digest(function)).base64EncodedString()
    }
}
