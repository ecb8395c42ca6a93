/// What S3's answers say, read without I/O: a `HeadObject`'s headers (length, ETag, checksum,
/// encryption), a `ListObjectsV2` page, an error's code and the region a bucket lives in; and
/// what a fetched object is checked against.
public enum S3Answers {
    /// What `HeadObject` with `x-amz-checksum-mode: ENABLED` tells of an object.
    public struct Head: Sendable, Equatable {
        /// `Content-Length`.
        public var length: Int64
        /// The `ETag`, quotes removed.
        public var etag: String?
        /// `x-amz-checksum-sha256`, base64, any `-N` suffix removed.
        public var sha256: [UInt8]?
        /// The number of parts of a multipart object: the `-N` of its ETag or checksum; nil for
        /// a single-part object.
        public var parts: Int?
        /// Whether the object's ETag is not its MD5 even when single-part: encrypted with KMS or a
        /// customer's key.
        public var etagIsNotMD5: Bool

        /// Reads a `HeadObject` answer's headers; nil without a usable `Content-Length`.
        public init?(_ headers: HTTPHeaderList) {
            guard let text = headers["Content-Length"], let length = Int64(text), length >= 0 else { return nil }
            self.length = length
            etag = headers["ETag"].map { $0.filter { $0 != "\"" } }
            var checksum = headers["x-amz-checksum-sha256"]
            var parts: Int?
            if let value = checksum, let dash = value.lastIndex(of: "-") {
                parts = Int(value[value.index(after: dash)...])
                checksum = String(value[..<dash])
            }
            if parts == nil, let etag, let dash = etag.lastIndex(of: "-") {
                parts = Int(etag[etag.index(after: dash)...])
            }
            if parts == nil, headers["x-amz-checksum-type"]?.uppercased() == "COMPOSITE" { parts = 0 }
            self.parts = parts
            sha256 = checksum.flatMap { Base64.decode(Array($0.utf8)) }.flatMap { $0.count == 32 ? $0 : nil }
            let encryption = headers["x-amz-server-side-encryption"]?.lowercased() ?? ""
            etagIsNotMD5 =
                encryption.hasPrefix("aws:kms") || headers["x-amz-server-side-encryption-customer-algorithm"] != nil
        }
    }

    /// How a fetched object is checked.
    public enum Check: Sendable, Equatable {
        /// Against a digest of the whole object (its SHA-256 checksum, or its ETag's MD5).
        case whole(Checksum)
        /// Part by part: the SHA-256 of the parts' SHA-256 digests; the parts' lengths are
        /// asked for (`HeadObject` with `partNumber`) before the download is added.
        case composite(hex: String, parts: Int)
        /// Nothing but its length: no checksum, and an ETag that is no MD5.
        case lengthOnly
    }

    /// What `head` lets haul check: the SHA-256 checksum when there is one (of the whole
    /// object, or of a multipart object's parts), else the ETag as MD5 where it is one (a
    /// single-part object, not encrypted with KMS or a customer's key), else the length.
    public static func check(_ head: Head) -> Check {
        if let sha256 = head.sha256 {
            if let parts = head.parts { return .composite(hex: ServerDigest.hex(sha256), parts: parts) }
            return .whole(Checksum(algorithm: .sha256, hex: ServerDigest.hex(sha256)))
        }
        if head.parts == nil, !head.etagIsNotMD5, let etag = head.etag, Checksum.Algorithm.md5.isDigest(hex: etag) {
            return .whole(Checksum(algorithm: .md5, hex: etag.lowercased()))
        }
        return .lengthOnly
    }

    /// One object of a listing.
    public struct ListedObject: Sendable, Equatable {
        /// Its key.
        public var key: String
        /// Its length.
        public var size: Int64

        /// An object from its key and length.
        public init(key: String, size: Int64) {
            self.key = key
            self.size = size
        }
    }

    /// One page of `ListObjectsV2`.
    public struct ListPage: Sendable, Equatable {
        /// The objects, in the store's (key) order.
        public var objects: [ListedObject]
        /// The token that asks for the next page; nil on the last.
        public var continuation: String?
    }

    /// Reads a `ListBucketResult` document.
    ///
    /// - Throws: `.badRequest` when it is not XML, not a listing, or an object lacks its key or
    ///   size, or a truncated page has no token.
    public static func listPage(_ document: String) throws(HaulError) -> ListPage {
        let root = try MiniXML.parse(document)
        guard root.name == "ListBucketResult" else {
            throw HaulError(.badRequest, "the store's listing is a <\(root.name)>, not a <ListBucketResult>")
        }
        var objects: [ListedObject] = []
        for content in root.all("Contents") {
            guard let key = content.first("Key")?.text, let sizeText = content.first("Size")?.text,
                let size = Int64(sizeText), size >= 0
            else { throw HaulError(.badRequest, "the store's listing has an object without a key or a size") }
            objects.append(ListedObject(key: key, size: size))
        }
        let truncated = root.first("IsTruncated")?.text.lowercased() == "true"
        let token = root.first("NextContinuationToken")?.text
        if truncated, token?.isEmpty ?? true {
            throw HaulError(.badRequest, "the store's listing is cut short without a continuation token")
        }
        return ListPage(objects: objects, continuation: truncated ? token : nil)
    }

    /// The `Code` and `Message` of an S3 error document; nil when it is not one.
    public static func error(_ document: String) -> (code: String, message: String)? {
        // Not XML is not an error document: the caller then shows the status alone.
        let root: MiniXML
        do { root = try MiniXML.parse(document) } catch { return nil }
        guard root.name == "Error", let code = root.first("Code")?.text else { return nil }
        return (code, root.first("Message")?.text ?? "")
    }

    /// The region a bucket lives in when an answer says it is another than `asked`: a 301, 307
    /// or 400 (`AuthorizationHeaderMalformed`, `PermanentRedirect`) with `x-amz-bucket-region`.
    public static func otherRegion(status: Int, headers: HTTPHeaderList, asked: String) -> String? {
        guard [301, 307, 400].contains(status), let region = headers["x-amz-bucket-region"], !region.isEmpty,
            region != asked, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" })
        else { return nil }
        return region
    }

    /// Where a listed object goes beneath the download directory.
    public enum Placement: Sendable, Equatable {
        /// At this path: its key after the prefix, each segment as given (dot files too).
        case path(String)
        /// Nowhere, and nothing to tell: a folder's marker (a key ending in `/`).
        case folder
        /// Nowhere: the key names no file beneath the directory (`GivenPaths.listedProblem`).
        case skipped(SkippedPath)
    }

    /// Where the object `key`, listed under `prefix`, goes beneath the download directory.
    public static func placement(key: String, prefix: String) -> Placement {
        guard !key.hasSuffix("/") else { return .folder }
        guard key.hasPrefix(prefix) else {
            return .skipped(SkippedPath(kind: "key", path: key, problem: "not under the prefix"))
        }
        let rest = String(key.dropFirst(prefix.count))
        if let problem = GivenPaths.listedProblem(rest) {
            return .skipped(SkippedPath(kind: "key", path: key, problem: problem))
        }
        return .path(rest)
    }
}
