/// An object or a prefix in an S3 bucket: `s3://BUCKET/KEY`, or `s3://BUCKET/PREFIX/` and
/// `s3://BUCKET` for every key under a prefix (a name ending in `/` is a prefix).
public struct S3Name: Sendable, Equatable {
    /// The bucket.
    public var bucket: String
    /// The key, or the prefix (empty: the whole bucket).
    public var key: String
    /// True when `key` is a prefix whose keys are listed and all fetched.
    public var isPrefix: Bool

    /// Parses the part after `s3://`. Throws a `.badURL` error naming what is wrong.
    public init(parsing name: String) throws(HaulError) {
        func bad(_ why: String) -> HaulError { HaulError(.badURL, "bad S3 name 's3://\(name)': \(why)") }
        let slash = name.firstIndex(of: "/")
        bucket = String(name[..<(slash ?? name.endIndex)])
        key = slash.map { String(name[name.index(after: $0)...]) } ?? ""
        isPrefix = key.isEmpty || key.hasSuffix("/")
        guard Self.isBucket(bucket) else {
            throw bad("a bucket's name is 3 to 63 lower-case letters, digits, '.' and '-'")
        }
        guard key.utf8.count <= 1024 else { throw bad("a key is at most 1,024 bytes") }
    }

    /// S3's rule for a bucket's name: 3 to 63 of `a-z 0-9 . -`, a letter or digit at each end.
    static func isBucket(_ text: String) -> Bool {
        func alphanumeric(_ byte: UInt8) -> Bool { (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 122) }
        let bytes = Array(text.utf8)
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last,
            alphanumeric(first), alphanumeric(last)
        else { return false }
        return bytes.allSatisfy { alphanumeric($0) || $0 == 46 || $0 == 45 } && !text.contains("..")
    }
}
