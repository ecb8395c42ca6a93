/// Digests of a file's fixed-length pieces (a Metalink's `<pieces>`): piece `i` is bytes
/// `i * length ..< (i + 1) * length` (the last one shorter). Checked with the whole file before
/// it is published; a piece that fails is fetched again, not the file (`+PieceCheck`).
public struct PieceHashes: Hashable, Codable, Sendable {
    /// Bytes in each piece but the last, which holds what is left.
    public var length: Int64
    /// The digest every piece's hash was made with.
    public var algorithm: Checksum.Algorithm
    /// Lowercase hex, one per piece, in order.
    public var hashes: [String]

    /// Checks and keeps the pieces of a document, hashes lowercased.
    ///
    /// - Throws: `.badRequest` when `length` is not positive, `hashes` is empty, or a hash is not
    ///   `algorithm`'s number of hex digits (naming the piece).
    public init(length: Int64, algorithm: Checksum.Algorithm, hashes: [String]) throws(HaulError) {
        guard length > 0 else { throw HaulError(.badRequest, "a piece length must be positive (got \(length))") }
        guard !hashes.isEmpty else { throw HaulError(.badRequest, "a piece list has no hash") }
        let lowered = hashes.map { $0.lowercased() }
        if let bad = lowered.firstIndex(where: { !algorithm.isDigest(hex: $0) }) {
            throw HaulError(
                .badRequest, "piece \(bad)'s \(algorithm.rawValue) hash is not \(algorithm.hexLength) hex digits")
        }
        self.length = length
        self.algorithm = algorithm
        self.hashes = lowered
    }

    /// Whether these pieces describe a file of `fileLength` bytes: one hash per piece, no more.
    public func fits(fileLength: Int64) -> Bool {
        fileLength > 0 && Int64(hashes.count) == (fileLength + length - 1) / length
    }

    /// The bytes of piece `index` in a file of `fileLength` bytes.
    public func range(of index: Int, fileLength: Int64) -> ByteRange {
        let start = Int64(index) * length
        return ByteRange(start: start, end: min(start + length, fileLength) - 1)
    }

    /// The pieces holding any of `count` bytes from `offset`.
    public func pieces(from offset: Int64, count: Int64) -> ClosedRange<Int> {
        Self.pieces(length: length, from: offset, count: count)
    }

    /// The same for pieces of `length` bytes (the machine's hot path keeps only the length).
    public static func pieces(length: Int64, from offset: Int64, count: Int64) -> ClosedRange<Int> {
        Int(offset / length)...Int((offset + max(count, 1) - 1) / length)
    }
}
