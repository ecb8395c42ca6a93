/// The cookies of one command: read from a Netscape cookie file (`--load-cookies`, the format
/// curl `-b FILE`, wget and aria2 read), added to by `Set-Cookie` answers, written back
/// (`--save-cookies`). Pure: the caller passes the time and does the file I/O.
///
/// Rules: RFC 6265 §5.1.3 domain matching (host-only cookies to their exact host), §5.1.4 path
/// matching and default path, `Secure` only over https, expired cookies dropped. A `Domain`
/// attribute that does not cover the answering host, or that names a bare top-level label
/// (`Domain=com`), makes `Set-Cookie` ignored; haul has no public-suffix list, so
/// `Domain=co.uk` from `a.co.uk` is taken, as curl without libpsl takes it.
public struct CookieJar: Hashable, Sendable, CustomStringConvertible {
    /// The cookies, in the order they were first stored. One may have expired since it was stored:
    /// `header(for:now:)` and `netscapeFile(now:)` skip it.
    public private(set) var cookies: [Cookie]

    /// A jar holding `cookies`; of two with the same name, domain and path, the later replaces the
    /// earlier.
    public init(_ cookies: [Cookie] = []) {
        self.cookies = []
        for cookie in cookies { store(cookie) }
    }

    /// True when the jar holds no cookie.
    public var isEmpty: Bool { cookies.isEmpty }

    /// Reads a Netscape cookie file's text. Comments (`#`, except the `#HttpOnly_` prefix) and
    /// blank lines are skipped; cookies expired at `now` are dropped.
    /// - Parameters:
    ///   - text: the file's contents.
    ///   - file: the path, named in errors.
    ///   - now: seconds since 1970.
    /// - Throws: `.badCookieFile` naming the file and line of the first line that is not
    ///   seven tab-separated fields (six, when the value is empty) with TRUE/FALSE flags and a
    ///   numeric expiry. The line's text is never quoted: it holds a credential.
    public init(netscapeFile text: String, file: String, now: Int64) throws(HaulError) {
        self.init()
        var number = 0
        // "\r\n" is one Character, which a split on "\n" alone would not cut: a file written
        // on Windows would be one long line.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            var line = rawLine
            if line.hasSuffix("\r") { line.removeLast() }
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            func bad(_ why: String) -> HaulError {
                HaulError(
                    .badCookieFile,
                    "\(file), line \(number): \(why) (a Netscape cookie file line is DOMAIN, "
                        + "TRUE/FALSE, PATH, TRUE/FALSE, EXPIRY, NAME, VALUE separated by tabs)")
            }
            var fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if fields.count == 6 { fields.append("") }
            guard fields.count == 7 else { throw bad("\(fields.count) field\(fields.count == 1 ? "" : "s"), not 7") }
            guard let subdomains = Self.flag(fields[1]) else { throw bad("the second field is not TRUE or FALSE") }
            guard let secure = Self.flag(fields[3]) else { throw bad("the fourth field is not TRUE or FALSE") }
            guard let expiry = Int64(fields[4]), expiry >= 0 else { throw bad("the expiry is not a number of seconds") }
            guard !fields[0].isEmpty, !fields[0].contains(" ") else { throw bad("no domain") }
            guard !fields[5].isEmpty else { throw bad("no cookie name") }
            // A carriage return (or any control character) in a name or value would reach the
            // `Cookie` field of a request.
            guard Self.hasNoControlCharacters(fields[5]), Self.hasNoControlCharacters(fields[6]) else {
                throw bad("the name or value holds a control character")
            }
            let cookie = Cookie(
                name: fields[5], value: fields[6], domain: fields[0], hostOnly: !subdomains,
                path: fields[2].isEmpty ? "/" : fields[2], secure: secure, httpOnly: httpOnly,
                expires: expiry == 0 ? nil : expiry)
            if !cookie.isExpired(now: now) { store(cookie) }
        }
    }

    private static func flag(_ text: String) -> Bool? {
        switch text.uppercased() {
        case "TRUE": true
        case "FALSE": false
        default: nil
        }
    }

    /// The `Cookie` field for a request to `url` at `now`, nil when no cookie belongs there.
    /// Longer paths first (§5.4).
    public func header(for url: RemoteURL, now: Int64) -> String? {
        let sent = cookies.enumerated()
            .filter { !$0.element.isExpired(now: now) && $0.element.matches(url) }
            .sorted {
                $0.element.path.count != $1.element.path.count
                    ? $0.element.path.count > $1.element.path.count : $0.offset < $1.offset
            }
            .map { "\($0.element.name)=\($0.element.value)" }
        return sent.isEmpty ? nil : sent.joined(separator: "; ")
    }

    /// Takes one `Set-Cookie` field value received from `url` at `now` (RFC 6265 §5.2, §5.3).
    /// Returns false when the cookie was ignored (malformed, a `Domain` that does not cover
    /// `url`'s host, `Secure` over plain http). An expired one removes the cookie it replaces.
    @discardableResult
    public mutating func receive(setCookie field: String, from url: RemoteURL, now: Int64) -> Bool {
        guard let cookie = Self.parse(setCookie: field, from: url, now: now) else { return false }
        if cookie.isExpired(now: now) {
            cookies.removeAll { cookie.replaces($0) }
        } else {
            store(cookie)
        }
        return true
    }

    /// A `Set-Cookie` value as a cookie, or nil when it must be ignored.
    public static func parse(setCookie field: String, from url: RemoteURL, now: Int64) -> Cookie? {
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let pair = parts.next(), let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingSpaces()
        let value = pair[pair.index(after: equals)...].trimmingSpaces()
        guard !name.isEmpty, Self.isClean(name), Self.isClean(value) else { return nil }
        let host = url.host.lowercased()
        var cookie = Cookie(
            name: name, value: value, domain: host, hostOnly: true, path: Cookie.defaultPath(of: url.path))
        var maxAge: Int64?
        var expires: Int64?
        while let attribute = parts.next() {
            let equals = attribute.firstIndex(of: "=")
            let key = attribute[..<(equals ?? attribute.endIndex)].trimmingSpaces().lowercased()
            let argument = equals.map { attribute[attribute.index(after: $0)...].trimmingSpaces() } ?? ""
            switch key {
            case "max-age":
                if let seconds = Int64(argument) {
                    // A server's number: past Int64 once added to now, it lasts as long as can be.
                    let (end, overflows) = now.addingReportingOverflow(seconds)
                    maxAge = seconds <= 0 ? Int64.min : overflows ? Int64.max : end
                }
            case "expires":
                if let date = Self.cookieDate(argument) { expires = date }
            case "domain":
                var domain = argument.lowercased()
                while domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                guard Cookie.domainMatches(host: host, domain: domain) else { return nil }
                // A bare label (`com`, `localhost` from `a.localhost`) would reach every host under it.
                if !domain.contains("."), domain != host { return nil }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                cookie.path = argument.hasPrefix("/") ? argument : Cookie.defaultPath(of: url.path)
            case "secure":
                cookie.secure = true
            case "httponly":
                cookie.httpOnly = true
            default:
                break
            }
        }
        // RFC 6265bis: a plain-http answer may not set (or overwrite) a Secure cookie.
        if cookie.secure, url.scheme != "https" { return nil }
        cookie.expires = maxAge ?? expires
        return cookie
    }

    /// No control characters (a tab or a line break would break the cookie file) and no `;`.
    static func isClean(_ text: String) -> Bool {
        hasNoControlCharacters(text) && !text.contains(";")
    }

    static func hasNoControlCharacters(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, and the dashed form many servers send in cookies
    /// (`Sun, 06-Nov-1994 08:49:37 GMT`).
    static func cookieDate(_ text: String) -> Int64? {
        HTTPDate.parse(String(text.map { $0 == "-" ? " " : $0 }))
    }

    /// The cookies not expired at `now` as a Netscape cookie file, which curl, wget and aria2
    /// read back. Session cookies are written with expiry 0, as curl writes them.
    public func netscapeFile(now: Int64) -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by haul. Holds credentials: keep it private.\n\n"
        for cookie in cookies where !cookie.isExpired(now: now) {
            let domain = (cookie.httpOnly ? "#HttpOnly_" : "") + (cookie.hostOnly ? "" : ".") + cookie.domain
            text +=
                [
                    domain, cookie.hostOnly ? "FALSE" : "TRUE", cookie.path, cookie.secure ? "TRUE" : "FALSE",
                    String(cookie.expires ?? 0), cookie.name, cookie.value,
                ].joined(separator: "\t") + "\n"
        }
        return text
    }

    /// A cookie that replaces one keeps its place, which orders cookies of equal path length
    /// (the old one's creation time, §5.3 step 11.3).
    private mutating func store(_ cookie: Cookie) {
        if let index = cookies.firstIndex(where: { cookie.replaces($0) }) {
            cookies[index] = cookie
        } else {
            cookies.append(cookie)
        }
    }

    /// `CookieJar(N cookies)`: a count, never a name or a value.
    public var description: String { "CookieJar(\(cookies.count) cookies)" }
}
