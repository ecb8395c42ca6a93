/// A digest the user expects the finished file to have (`--checksum sha-256=HEX`). Checked
/// before the `.part` file is renamed, so a wrong file never appears under the final name. Also
/// the form of a digest the server announced (`ServerDigest`).
public struct Checksum: Hashable, Codable, Sendable, CustomStringConvertible {
    /// A digest algorithm; the raw value is its name as `--checksum` and `description` write it.
    public enum Algorithm: String, Hashable, Codable, Sendable, CaseIterable {
        /// SHA-256: a 32-byte digest.
        case sha256 = "sha-256"
        /// SHA-512: a 64-byte digest.
        case sha512 = "sha-512"
        /// SHA-1: a 20-byte digest; it catches a damaged file, not a forged one.
        case sha1 = "sha-1"
        /// MD5: a 16-byte digest; it catches a damaged file, not a forged one.
        case md5 = "md5"
        /// Git's blob id: the SHA-1 of `blob LENGTH\0` followed by the bytes (what the Hugging
        /// Face Hub gives as a file's ETag when the file is not in LFS). Like SHA-1, it catches
        /// damage, not forgery.
        case gitBlob = "git-blob"

        var hexLength: Int { byteCount * 2 }

        /// Whether `hex` is a digest of this algorithm written in hex: the right length, only hex digits.
        func isDigest(hex: String) -> Bool {
            hex.count == hexLength && hex.allSatisfy(\.isHexDigit)
        }

        /// Whether a digest of this algorithm names a file's content: two files with one
        /// SHA-256 or SHA-512 are one file (`QueueSlots`' twins, the content store). MD5 and
        /// SHA-1 catch damage, not forgery: a file is never taken for another by them.
        public var identifiesContent: Bool { self == .sha256 || self == .sha512 }

        /// Bytes of the digest.
        public var byteCount: Int {
            switch self {
            case .sha512: 64
            case .sha256: 32
            case .sha1, .gitBlob: 20
            case .md5: 16
            }
        }

        /// Which of two digests of one file is worth checking: sha-512 > sha-256 > sha-1 > md5 >
        /// git-blob (no server announces the last).
        public var strength: Int {
            switch self {
            case .sha512: 4
            case .sha256: 3
            case .sha1: 2
            case .md5: 1
            case .gitBlob: 0
            }
        }
    }

    /// The algorithm the digest is made with.
    public var algorithm: Algorithm
    /// Lowercase hex.
    public var hex: String

    /// A digest from its hex form, lowercased. The length and the digits are not checked;
    /// `init(parsing:)` checks them.
    public init(algorithm: Algorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// Parses `sha-256=HEX` (also `sha256=`, `sha-512=`, `sha1=`, `md5=`, any case).
    public init(parsing text: String) throws(HaulError) {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2 else {
            throw HaulError(.usage, "checksum must look like sha-256=HEX, got '\(text)'")
        }
        let name = parts[0].lowercased().replacingOccurrences(of: "-", with: "")
        guard
            let algorithm = Algorithm.allCases.first(where: {
                $0.rawValue.replacingOccurrences(of: "-", with: "") == name
            })
        else {
            throw HaulError(
                .usage, "unknown checksum algorithm '\(parts[0])' (use sha-256, sha-512, sha-1, md5 or git-blob)")
        }
        let hex = parts[1].lowercased()
        guard algorithm.isDigest(hex: hex) else {
            throw HaulError(.usage, "\(algorithm.rawValue) checksum must be \(algorithm.hexLength) hex digits")
        }
        self.init(algorithm: algorithm, hex: hex)
    }

    /// `sha-256=HEX`: the form `--checksum` takes.
    public var description: String { "\(algorithm.rawValue)=\(hex)" }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
