/// What identifies one version of a remote file, so that bytes from two versions are never
/// glued together. A strong ETag is preferred; Last-Modified is the fallback (RFC 9110 §13.1.4).
public struct EntityValidator: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The `ETag` as the server sent it, quotes and any `W/` kept; nil when it sent none.
    public var etag: String?
    /// The `Last-Modified` date as the server wrote it (not parsed); nil when it sent none.
    public var lastModified: String?

    /// A validator with these values, either of which may be nil.
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Reads the validator from response headers; nil when the server sent neither.
    public init?(headers: HTTPHeaderList) {
        let etag = headers["ETag"]
        let lastModified = headers["Last-Modified"]
        guard etag != nil || lastModified != nil else { return nil }
        self.init(etag: etag, lastModified: lastModified)
    }

    /// A weak ETag (`W/"..."`) may not be used in `If-Range`.
    public var strongETag: String? {
        guard let etag, !etag.hasPrefix("W/") else { return nil }
        return etag
    }

    /// The value for `If-Range`: the strong ETag, else the date.
    public var ifRangeValue: String? { strongETag ?? lastModified }

    /// Whether a response's validator shows a different entity. Only fields both sides carry are
    /// compared, so a server that drops a header is not taken for a changed file.
    public func conflicts(with other: EntityValidator) -> Bool {
        if let mine = etag, let theirs = other.etag { return mine != theirs }
        if let mine = lastModified, let theirs = other.lastModified { return mine != theirs }
        return false
    }

    /// The ETag, else the date, else `none`, for logs and messages.
    public var description: String { etag ?? lastModified ?? "none" }
}
