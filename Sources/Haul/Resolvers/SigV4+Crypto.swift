import Crypto
import HaulCore

extension SigV4.Primitives {
    /// SHA-256 and HMAC-SHA-256 from swift-crypto.
    public static let crypto = SigV4.Primitives(
        sha256: { Array(SHA256.hash(data: $0)) },
        hmacSHA256: { key, message in
            Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        })
}
