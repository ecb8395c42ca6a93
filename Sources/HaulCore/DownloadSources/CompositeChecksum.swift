/// A digest of a file's parts' digests: S3's checksum of a multipart object
/// (`x-amz-checksum-sha256` ending in `-N`, or `ChecksumType: COMPOSITE`), which is the
/// SHA-256 of the parts' SHA-256 digests, concatenated in order. Checked part by part: each part's
/// digest is computed as the file is read, then the digest of those digests.
public struct CompositeChecksum: Hashable, Codable, Sendable {
    /// A run of parts of one length.
    public struct Run: Hashable, Codable, Sendable {
        /// Bytes in each part of the run.
        public var length: Int64
        /// How many parts in a row have that length.
        public var count: Int

        /// A run of `count` parts of `length` bytes.
        public init(length: Int64, count: Int) {
            self.length = length
            self.count = count
        }
    }

    /// The digest of each part and of their concatenation.
    public var algorithm: Checksum.Algorithm
    /// The parts' lengths in order, as runs (S3's parts are nearly always one length but the last).
    public var runs: [Run]
    /// The expected digest of the digests, lowercase hex.
    public var hex: String

    /// A checksum of parts of `lengths` (in order), each hashed with `algorithm`, whose
    /// digests hash to `hex`.
    ///
    /// - Throws: `.badRequest` when there is no part, a part is empty, or `hex` is not a digest
    ///   of `algorithm`.
    public init(algorithm: Checksum.Algorithm, partLengths lengths: [Int64], hex: String) throws(HaulError) {
        guard !lengths.isEmpty, lengths.allSatisfy({ $0 > 0 }) else {
            throw HaulError(.badRequest, "a composite checksum needs parts of at least one byte")
        }
        guard algorithm.isDigest(hex: hex) else {
            throw HaulError(.badRequest, "a composite \(algorithm.rawValue) is not \(algorithm.hexLength) hex digits")
        }
        var runs: [Run] = []
        for length in lengths {
            if runs.last?.length == length {
                runs[runs.count - 1].count += 1
            } else {
                runs.append(Run(length: length, count: 1))
            }
        }
        self.algorithm = algorithm
        self.runs = runs
        self.hex = hex.lowercased()
    }

    /// The sum of the parts' lengths: the file's length.
    public var totalLength: Int64 { runs.reduce(0) { $0 + $1.length * Int64($1.count) } }

    /// Every part's length, in order.
    public var partLengths: [Int64] { runs.flatMap { Array(repeating: $0.length, count: $0.count) } }
}
