/// What to send for the next attempt.
public struct RequestPlan: Hashable, Sendable {
    /// The URL the request goes to.
    public var url: RemoteURL
    /// The `Range` to ask for; nil asks for the whole entity.
    public var range: ByteRange?
    /// The `If-Range` value, so that a changed file comes back whole (200) instead of being glued on.
    public var ifRange: String?
    /// The extra fields (the user's `-H`, cookies); `allHeaders` adds the ones Haul needs.
    public var headers: HTTPHeaderList
    /// Sent as `Authorization: Basic` to `url`'s origin, never to another one a redirect leads to.
    public var credentials: Credentials?
    /// The request may go over HTTP/2 when the server offers it (`HTTPVersionPolicy`); otherwise
    /// over HTTP/1.1. Chosen once per download, so all its requests use the same version.
    public var allowsHTTP2: Bool
    /// `-N`: the local file's time as an HTTP date; a 304 then means the file is as new as the
    /// server's (`ResponseCheck.Verdict.notModified`).
    public var ifModifiedSince: String?
    /// Signed with AWS Signature Version 4 in this scope when it is sent (`DownloadRequest.signing`),
    /// to `url`'s origin only; nil: sent as it is.
    public var signing: SigV4Scope?
    /// `GET`, or `HEAD` for a resolver's question about an object.
    public var method: String
    /// Sent as `Authorization` to `url`'s origin unless `headers` has one (a registry's token;
    /// `DownloadRequest.authorization`).
    public var authorization: String?

    /// A plan with these fields; `credentials`, `ifModifiedSince` and `signing` default to nil,
    /// `allowsHTTP2` to false and `method` to `GET`.
    public init(
        url: RemoteURL, range: ByteRange?, ifRange: String?, headers: HTTPHeaderList, credentials: Credentials? = nil,
        allowsHTTP2: Bool = false, ifModifiedSince: String? = nil, signing: SigV4Scope? = nil, method: String = "GET"
    ) {
        self.ifModifiedSince = ifModifiedSince
        self.signing = signing
        self.method = method
        self.url = url
        self.range = range
        self.ifRange = ifRange
        self.headers = headers
        self.credentials = credentials
        self.allowsHTTP2 = allowsHTTP2
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
        if let ifModifiedSince { all.replace(name: "If-Modified-Since", value: ifModifiedSince) }
        return all
    }
}

/// DESIGN rule 4 as a pure function: what a response means for the bytes already on disk.
public enum ResponseCheck {
    /// What a response means, and what to do next.
    public enum Verdict: Hashable, Sendable {
        /// A 206 for exactly the bytes asked (or fewer at the end): take it. `total` and
        /// `validator` are what the response says, falling back to what was known.
        case partial(start: Int64, end: Int64, total: Int64?, validator: EntityValidator?)
        /// A 200: the whole entity from byte 0, `length` bytes when announced. The bytes on disk
        /// (if any) are not from this response and cannot be kept.
        case whole(length: Int64?, validator: EntityValidator?)
        /// 416 with `*/N` equal to where the part stands: nothing left to fetch.
        case alreadyComplete(total: Int64)
        /// The remote file is not the one the bytes on disk came from: start over.
        case entityChanged
        /// A 304 to `If-Modified-Since` (`-N`): the local file is as new as the server's.
        case notModified
        /// Worth another try (5xx, 429, 408), after `retryAfter` when the server said so.
        case retry(HaulError, retryAfter: Duration?)
        /// Stop with this error: another attempt would get the same answer.
        case fail(HaulError)
    }

    /// What to do with a response to a part's request: keep its body (and from where), start
    /// over, retry, or fail.
    ///
    /// - Parameters:
    ///   - head: the response's status and headers.
    ///   - plan: the request it answers (its URL and range).
    ///   - next: the remote offset the part needs next (where a 416 says "complete").
    ///   - partEnd: the part's last byte, when known.
    ///   - resuming: the part already has bytes on disk.
    ///   - requested: the user's `--range`, if any.
    ///   - validator: the validator the download knew before this response.
    ///   - total: the length the download knew before this response.
    ///   - nowSecondsSince1970: the time, for a `Retry-After` given as a date.
    public static func evaluate(
        _ head: ResponseHead,
        asked plan: RequestPlan,
        next: Int64,
        partEnd: Int64?,
        resuming: Bool,
        requested: ByteRange?,
        validator: EntityValidator?,
        total: Int64?,
        nowSecondsSince1970: Int64
    ) -> Verdict {
        let url = plan.url.absoluteString
        let responseValidator = EntityValidator(headers: head.headers)
        switch head.status {
        case 200, 203:
            let length = head.headers["Content-Length"].flatMap(Int64.init)
            if let length, let start = requested?.start, start >= length {
                return .fail(HaulError(.badResponse, "range \(start)- is past the end of \(url) (\(length) bytes)"))
            }
            return .whole(length: length, validator: responseValidator)

        case 206:
            guard let header = head.headers["Content-Range"], let contentRange = ContentRange(parsing: header),
                let range = contentRange.range
            else {
                return .retry(
                    HaulError(.badResponse, "206 from \(url) without a usable Content-Range"), retryAfter: nil)
            }
            if let validator, let responseValidator, validator.conflicts(with: responseValidator) {
                return .entityChanged
            }
            if let total, let newTotal = contentRange.total, total != newTotal { return .entityChanged }
            let asked = plan.range ?? ByteRange(start: 0)
            let askedEnd = asked.end ?? Int64.max
            guard range.lowerBound == asked.start, range.upperBound <= askedEnd else {
                return .retry(
                    HaulError(
                        .badResponse,
                        "\(url) sent bytes \(range.lowerBound)-\(range.upperBound) when asked for \(asked); not written"
                    ),
                    retryAfter: nil)
            }
            return .partial(
                start: range.lowerBound, end: range.upperBound, total: contentRange.total ?? total,
                validator: responseValidator ?? validator)

        case 416:
            let entityLength = head.headers["Content-Range"].flatMap(ContentRange.init(parsing:))?.total
            // Resuming at the end, or a first piece asked of an empty file (some servers answer
            // a range of an empty file with 416 `*/0`).
            if let entityLength, entityLength == next, resuming || (next == 0 && requested == nil),
                partEnd == nil || partEnd == entityLength - 1
            {
                return .alreadyComplete(total: entityLength)
            }
            if let entityLength, resuming, entityLength < next {
                // Shorter than what we hold: the file changed.
                return .entityChanged
            }
            let size = entityLength.map { " (the file is \($0) bytes)" } ?? ""
            return .fail(
                HaulError(
                    .badResponse, "range \(plan.range?.description ?? "") not satisfiable for \(url)\(size)",
                    httpStatus: 416))

        case 408, 425, 429, 500, 502, 503, 504:
            let retryAfter = head.headers["Retry-After"].flatMap {
                RetryAfter.parse($0, nowSecondsSince1970: nowSecondsSince1970)
            }
            return .retry(
                HaulError(.httpStatus, "\(url): HTTP \(head.status)", httpStatus: head.status),
                retryAfter: retryAfter)

        case 304 where plan.ifModifiedSince != nil:
            return .notModified

        case 300..<400:
            return .fail(
                HaulError(
                    .tooManyRedirects, "\(url): redirect (HTTP \(head.status)) not followed", httpStatus: head.status))

        default:
            return .fail(
                HaulError(.httpStatus, "\(url): HTTP \(head.status)\(reason(head.status))", httpStatus: head.status))
        }
    }

    /// The reason phrase haul names after an error status (" Not Found"), or nothing.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 401: " Unauthorized"
        case 403: " Forbidden"
        case 404: " Not Found"
        case 410: " Gone"
        default: ""
        }
    }
}
