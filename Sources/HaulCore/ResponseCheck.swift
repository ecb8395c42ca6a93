/// What to send for the next attempt.
public struct RequestPlan: Hashable, Sendable {
    public var url: RemoteURL
    /// The `Range` to ask for; nil asks for the whole entity.
    public var range: ByteRange?
    /// The `If-Range` value, so that a changed file comes back whole (200) instead of being glued on.
    public var ifRange: String?
    public var headers: HTTPHeaderList

    public init(url: RemoteURL, range: ByteRange?, ifRange: String?, headers: HTTPHeaderList) {
        self.url = url
        self.range = range
        self.ifRange = ifRange
        self.headers = headers
    }

    /// The headers to send, extras first, ours last (ours win).
    public var allHeaders: HTTPHeaderList {
        var all = headers
        // Byte offsets must mean file offsets: no transfer compression.
        all.replace(name: "Accept-Encoding", value: "identity")
        if let range {
            all.replace(name: "Range", value: "bytes=\(range)")
            if let ifRange { all.replace(name: "If-Range", value: ifRange) } else { all.remove(name: "If-Range") }
        } else {
            all.remove(name: "Range")
            all.remove(name: "If-Range")
        }
        return all
    }
}

/// How to take a response body: where it goes in the `.part` file and which of its bytes to keep.
public struct BodyPlan: Hashable, Sendable {
    /// Truncate the `.part` file to this length and append from here.
    public var fileOffset: Int64
    /// Bytes at the start of the body to drop (a 200 answer to a range request that starts past zero).
    public var discard: Int64
    /// Keep at most this many bytes after the discarded ones; nil keeps all.
    public var limit: Int64?

    public init(fileOffset: Int64, discard: Int64 = 0, limit: Int64? = nil) {
        self.fileOffset = fileOffset
        self.discard = discard
        self.limit = limit
    }
}

/// DESIGN rule 3 as a pure function: decide what a response means for the bytes already on disk.
public enum ResponseCheck {
    public enum Verdict: Hashable, Sendable {
        /// Take the body. `restarted` means the bytes already on disk are discarded.
        case body(BodyPlan, total: Int64?, validator: EntityValidator?, restarted: Bool)
        /// 416 with `*/N` equal to what is on disk: nothing left to fetch.
        case alreadyComplete(total: Int64)
        /// The remote file is not the one the bytes on disk came from: start over.
        case entityChanged
        /// Worth another try (5xx, 429, 408), after `retryAfter` when the server said so.
        case retry(HaulError, retryAfter: Duration?)
        case fail(HaulError)
    }

    /// - Parameters:
    ///   - segment: the segment the request was for, as it stood when it was sent.
    ///   - validator, total: what the record knew before this response.
    public static func evaluate(
        _ head: ResponseHead,
        asked plan: RequestPlan,
        segment: Segment,
        validator: EntityValidator?,
        total: Int64?,
        nowSecondsSince1970: Int64
    ) -> Verdict {
        let url = plan.url.absoluteString
        let responseValidator = EntityValidator(headers: head.headers)
        switch head.status {
        case 200, 203:
            let length = head.headers["Content-Length"].flatMap(Int64.init)
            // The whole entity, from byte 0: a resume the server did not honour starts over.
            let restarted = segment.written > 0
            let discard = segment.start
            if let length, discard >= length {
                return .fail(HaulError(.badResponse, "range \(segment.start)- is past the end of \(url) (\(length) bytes)"))
            }
            var limit: Int64? = nil
            if let end = segment.end { limit = end - segment.start + 1 }
            return .body(BodyPlan(fileOffset: 0, discard: discard, limit: limit),
                         total: length, validator: responseValidator, restarted: restarted)

        case 206:
            guard let header = head.headers["Content-Range"], let contentRange = ContentRange(parsing: header),
                  let range = contentRange.range else {
                return .retry(HaulError(.badResponse, "206 from \(url) without a usable Content-Range"), retryAfter: nil)
            }
            if let validator, let responseValidator, validator.conflicts(with: responseValidator) {
                return .entityChanged
            }
            if let total, let newTotal = contentRange.total, total != newTotal { return .entityChanged }
            let asked = plan.range ?? ByteRange(start: 0)
            let askedEnd = asked.end ?? Int64.max
            guard range.lowerBound == asked.start, range.upperBound <= askedEnd else {
                return .retry(HaulError(.badResponse,
                    "\(url) sent bytes \(range.lowerBound)-\(range.upperBound) when asked for \(asked); not appended"),
                    retryAfter: nil)
            }
            return .body(BodyPlan(fileOffset: segment.written, limit: range.upperBound - range.lowerBound + 1),
                         total: contentRange.total ?? total, validator: responseValidator ?? validator, restarted: false)

        case 416:
            let entityLength = head.headers["Content-Range"].flatMap(ContentRange.init(parsing:))?.total
            if let entityLength, entityLength == segment.nextOffset, segment.written > 0,
               segment.end == nil || segment.end == entityLength - 1 {
                return .alreadyComplete(total: entityLength)
            }
            if let entityLength, segment.written > 0, entityLength < segment.nextOffset {
                // Shorter than what we hold: the file changed.
                return .entityChanged
            }
            let size = entityLength.map { " (the file is \($0) bytes)" } ?? ""
            return .fail(HaulError(.badResponse, "range \(plan.range?.description ?? "") not satisfiable for \(url)\(size)",
                                   httpStatus: 416))

        case 408, 425, 429, 500, 502, 503, 504:
            let retryAfter = head.headers["Retry-After"].flatMap {
                RetryAfter.parse($0, nowSecondsSince1970: nowSecondsSince1970)
            }
            return .retry(HaulError(.httpStatus, "\(url): HTTP \(head.status)", httpStatus: head.status),
                          retryAfter: retryAfter)

        case 300..<400:
            return .fail(HaulError(.tooManyRedirects, "\(url): redirect (HTTP \(head.status)) not followed", httpStatus: head.status))

        default:
            return .fail(HaulError(.httpStatus, "\(url): HTTP \(head.status)\(reason(head.status))", httpStatus: head.status))
        }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 401: " Unauthorized"
        case 403: " Forbidden"
        case 404: " Not Found"
        case 410: " Gone"
        default: ""
        }
    }
}
