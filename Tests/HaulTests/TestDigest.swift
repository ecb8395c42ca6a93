import Crypto
import Foundation
import HaulTesting

enum TestDigest {
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}

extension Payload {
    /// The payload's digest in base64, as a server sends it in `Repr-Digest` or `Digest`.
    func base64Digest<H: HashFunction>(_: H.Type) -> String {
        var hasher = H()
        var offset: Int64 = 0
        while offset < length {
            let end = min(length, offset + 1 << 20)
            hasher.update(data: bytes(offset..<end))
            offset = end
        }
        return Data(hasher.finalize()).base64EncodedString()
    }
}
