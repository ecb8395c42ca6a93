import Foundation
import NIOHTTP1

/// The complete answer to one request, worked out before anything is written.
///
/// Keeping the HTTP semantics (ranges, validators, faults) in a pure value separates them from
/// the event-loop plumbing in ``HTTPFaultHandler``, which only has to put the plan on the wire.
struct ResponsePlan {
    enum Body {
        case none
        case text(String)
        case payload(Payload, Range<Int64>)
        /// Bytes put on the wire as they are, framing included (``Fault/brokenChunks(_:)``).
        case raw([UInt8])
    }

    /// What happens after the body (or after `bodyLimit` bytes of it).
    enum Ending {
        /// Finish the response; the connection stays open for the next request.
        case complete
        /// Close the TCP connection once everything written has been flushed.
        case close
        /// Write nothing more but keep the connection open.
        case stall
        /// Like `stall`, and nothing is read from the connection from the head on.
        case hold
    }

    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: Body
    /// Send at most this many body bytes.
    var bodyLimit: Int64?
    var ending: Ending
    var throttle: Int?

    init(
        status: HTTPResponseStatus,
        headers: HTTPHeaders,
        body: Body,
        bodyLimit: Int64? = nil,
        ending: Ending = .complete,
        throttle: Int? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyLimit = bodyLimit
        self.ending = ending
        self.throttle = throttle
    }

    init(method: HTTPMethod, requestHeaders: HTTPHeaders, decision: ServerState.Decision) {
        let sendsBody = method != .HEAD
        guard let route = decision.route else {
            self = .text(status: 404, headers: [], sendsBody: sendsBody)
            return
        }
        if let cap = decision.refusal {
            self = .text(
                status: cap.status,
                headers: cap.retryAfter.map { [("Retry-After", $0)] } ?? [],
                sendsBody: sendsBody
            )
            return
        }
        for (name, value) in route.requiredHeaders
        where requestHeaders[name].joined(separator: ", ") != value {
            self = .text(status: 403, headers: [], sendsBody: sendsBody, text: "Forbidden: \(name)\n")
            return
        }
        switch decision.fault {
        case .status(let code, let headers):
            self = .text(status: code, headers: headers, sendsBody: sendsBody)
        case .document(let text, let headers):
            self = .text(status: 200, headers: headers, sendsBody: sendsBody, text: text)
        case .redirect(let target, let code):
            let location =
                target.hasPrefix("http://") || target.hasPrefix("https://")
                ? target
                : decision.origin + target
            self = .text(
                status: code,
                headers: [("Location", location)],
                sendsBody: sendsBody,
                text: "Redirecting to \(location)\n"
            )
        case .none, .dropAfter, .ignoreRange, .wrongContentRange, .lyingContentLength, .stallAfter, .holdAfter,
            .switchEntity, .brokenChunks:
            self = .entity(
                route: route,
                fault: decision.fault,
                requestHeaders: requestHeaders,
                sendsBody: sendsBody,
                throttle: decision.throttle
            )
        }
    }

    /// A short `text/plain` answer instead of the payload (errors, redirects).
    private static func text(
        status code: Int,
        headers extra: [(String, String)],
        sendsBody: Bool,
        text: String? = nil
    ) -> ResponsePlan {
        let status = HTTPResponseStatus(statusCode: code)
        let text = text ?? "\(code) \(status.reasonPhrase)\n"
        var headers = HTTPHeaders(extra)
        guard status.mayHaveResponseBody else {
            // 1xx, 204 and 304 cannot carry a body (RFC 9110 6.4.1).
            return ResponsePlan(status: status, headers: headers, body: .none)
        }
        if !headers.contains(name: "Content-Type") {
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        }
        if !headers.contains(name: "Content-Length") && !headers.contains(name: "Transfer-Encoding") {
            headers.add(name: "Content-Length", value: String(text.utf8.count))
        }
        return ResponsePlan(status: status, headers: headers, body: sendsBody ? .text(text) : .none)
    }

    /// The payload, whole or in part, with the fault's changes to status, headers and body.
    private static func entity(
        route: Route,
        fault: Fault,
        requestHeaders: HTTPHeaders,
        sendsBody: Bool,
        throttle: Int?
    ) -> ResponsePlan {
        if let notModified = notModified(route: route, requestHeaders: requestHeaders) { return notModified }
        let length = route.payload.length
        var selection = RangeRequest.select(
            route: route,
            requestHeaders: requestHeaders,
            ignoringRange: { if case .ignoreRange = fault { true } else { false } }()
        )
        if case .wrongContentRange(let shift) = fault, case .partial(let asked) = selection {
            let start = min(max(asked.lowerBound + shift, 0), length - 1)
            let end = min(length, start + (asked.upperBound - asked.lowerBound))
            selection = .partial(start..<end)
        }

        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        let status: HTTPResponseStatus
        let bodyRange: Range<Int64>
        switch selection {
        case .whole:
            status = .ok
            bodyRange = 0..<length
        case .partial(let range):
            status = .partialContent
            bodyRange = range
            headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
        case .unsatisfiable:
            status = .rangeNotSatisfiable
            bodyRange = 0..<0
            headers.add(name: "Content-Range", value: "bytes */\(length)")
        }
        let bodyCount = bodyRange.upperBound - bodyRange.lowerBound

        var limit: Int64?
        var ending = Ending.complete
        switch fault {
        case .lyingContentLength(let extra):
            headers.add(name: "Content-Length", value: String(bodyCount + extra))
            ending = .close
        case .brokenChunks where status != .rangeNotSatisfiable:
            // Transfer-coding names are case-insensitive (RFC 9112 §7), and NIO's encoder frames
            // only a body whose header reads exactly "chunked": this one is framed by the plan.
            headers.add(name: "Transfer-Encoding", value: "Chunked")
            ending = .close
        default:
            if route.chunked && status != .rangeNotSatisfiable {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            } else {
                headers.add(name: "Content-Length", value: String(bodyCount))
            }
        }
        switch fault {
        case .dropAfter(let count):
            limit = max(0, count)
            ending = .close
        case .stallAfter(let count):
            limit = max(0, count)
            ending = .stall
        case .holdAfter(let count):
            limit = max(0, count)
            ending = .hold
        default:
            break
        }

        if route.acceptsRanges {
            headers.add(name: "Accept-Ranges", value: "bytes")
        }
        if let etag = route.etag {
            headers.add(name: "ETag", value: etag)
        }
        if let lastModified = route.lastModified {
            headers.add(name: "Last-Modified", value: lastModified)
        }
        if let disposition = route.contentDisposition {
            headers.add(name: "Content-Disposition", value: disposition)
        }
        if status != .rangeNotSatisfiable {
            for (name, value) in route.entityHeaders { headers.add(name: name, value: value) }
        }

        var body: Body = sendsBody && bodyCount > 0 ? .payload(route.payload, bodyRange) : .none
        if case .brokenChunks(let way) = fault, sendsBody, status != .rangeNotSatisfiable {
            body = .raw(brokenChunks(way, route.payload.bytes(bodyRange)))
        }
        return ResponsePlan(
            status: status,
            headers: headers,
            body: body,
            bodyLimit: limit,
            ending: ending,
            throttle: throttle
        )
    }
}

extension ResponsePlan {
    /// A 304 (no body) when the request's `If-Modified-Since` is not older than the route's
    /// `Last-Modified` (RFC 9110 §13.1.3; ignored when the route has none, or either date is not
    /// an IMF-fixdate).
    static func notModified(route: Route, requestHeaders: HTTPHeaders) -> ResponsePlan? {
        guard let modified = route.lastModified.flatMap(httpDate),
            let since = requestHeaders.first(name: "If-Modified-Since").flatMap(httpDate), since >= modified
        else { return nil }
        var headers = HTTPHeaders()
        if let etag = route.etag { headers.add(name: "ETag", value: etag) }
        if let lastModified = route.lastModified { headers.add(name: "Last-Modified", value: lastModified) }
        return ResponsePlan(status: .notModified, headers: headers, body: .none)
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}

/// The wire bytes of a chunked body broken in `way`.
private func brokenChunks(_ way: BrokenChunks, _ bytes: [UInt8]) -> [UInt8] {
    func chunk(_ slice: ArraySlice<UInt8>) -> [UInt8] {
        slice.isEmpty ? [] : Array(String(slice.count, radix: 16).utf8) + [13, 10] + slice + [13, 10]
    }
    switch way {
    case .badSize(let size, let after):
        let cut = Int(min(max(after, 0), Int64(bytes.count)))
        return chunk(bytes[..<cut]) + Array(size.utf8) + [13, 10] + bytes[cut...]
    case .noLastChunk:
        return chunk(bytes[...])
    }
}

/// Range and If-Range handling for a single byte range, as a download manager uses it.
enum RangeRequest: Equatable {
    case whole
    case partial(Range<Int64>)
    case unsatisfiable

    /// Decides what part of the route's payload a request gets.
    ///
    /// Malformed or multi-range `Range` headers are ignored (200), as RFC 9110 allows; a
    /// mismatching `If-Range` also yields the whole entity.
    static func select(route: Route, requestHeaders: HTTPHeaders, ignoringRange: Bool) -> RangeRequest {
        guard route.acceptsRanges, !ignoringRange, let value = requestHeaders.first(name: "Range") else {
            return .whole
        }
        if let validator = requestHeaders.first(name: "If-Range")?.trimmingSpaces() {
            // Only strong validators may validate a range (RFC 9110 13.1.5).
            let matchesETag =
                route.etag == validator && !validator.hasPrefix("W/") && route.validatorQuirk != .ifRangeDatesOnly
            let matchesDate = route.lastModified == validator
            if !matchesETag && !matchesDate {
                return .whole
            }
        }
        guard let spec = ByteRangeSpec(value) else {
            return .whole
        }
        return spec.resolve(length: route.payload.length)
    }
}

/// One parsed `bytes=` range: `a-b`, `a-` or `-n`.
struct ByteRangeSpec: Equatable {
    var first: Int64?
    var last: Int64?

    init?(_ header: String) {
        let value = header.trimmingSpaces()
        guard value.count > 6, value.prefix(6).lowercased() == "bytes=" else { return nil }
        let set = value.dropFirst(6)
        guard !set.contains(",") else { return nil }
        let parts = set.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let firstText = String(parts[0]).trimmingSpaces()
        let lastText = String(parts[1]).trimmingSpaces()
        switch (firstText.isEmpty, lastText.isEmpty) {
        case (true, true):
            return nil
        case (true, false):
            guard let suffix = ByteRangeSpec.number(lastText) else { return nil }
            self.first = nil
            self.last = suffix
        case (false, true):
            guard let first = ByteRangeSpec.number(firstText) else { return nil }
            self.first = first
            self.last = nil
        case (false, false):
            guard let first = ByteRangeSpec.number(firstText), let last = ByteRangeSpec.number(lastText),
                last >= first
            else { return nil }
            self.first = first
            self.last = last
        }
    }

    func resolve(length: Int64) -> RangeRequest {
        switch (first, last) {
        case (let first?, let last):
            guard first < length else { return .unsatisfiable }
            let end = min(last ?? (length - 1), length - 1)
            return .partial(first..<(end + 1))
        case (nil, let suffix?):
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(max(0, length - suffix)..<length)
        case (nil, nil):
            return .whole
        }
    }

    private static func number(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}
