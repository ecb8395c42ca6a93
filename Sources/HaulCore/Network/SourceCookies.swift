/// The `Cookie` field each URL of one download is sent with, fixed when the download is added
/// (aria2's `load-cookies` over the daemon's JSON-RPC): a cookie file read once, and the jar's
/// rules (domain or exact host, path, `Secure`, expiry at that moment) applied to each of the
/// download's URLs in turn.
///
/// Kept per URL, not in the request's `headers`, because those go to every source: a mirror on
/// another host gets only the cookies that belong to it (often none), a URL added later
/// (`changeUri`, `PUT .../urls`) none at all, and a redirect to another origin none (the
/// transport drops `Cookie` there, as it does for `-H Cookie`).
///
/// A credential: `description`, `debugDescription` and the mirror (what `print`, string
/// interpolation and `dump` of anything holding one use) tell how many URLs have a field, never
/// a value. Stored with the request, so only in the daemon's private state (0600).
public struct SourceCookies: Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `RemoteURL.absoluteString` (no credentials in it) → the `Cookie` field value.
    public private(set) var fields: [String: String]

    /// No `Cookie` field for any URL.
    public init() {
        fields = [:]
    }

    /// The field for each of `urls` that some cookie of `jar` belongs to at `now`.
    public init(jar: CookieJar, urls: [RemoteURL], now: Int64) {
        var fields: [String: String] = [:]
        for url in urls {
            if let field = jar.header(for: url, now: now) { fields[url.absoluteString] = field }
        }
        self.fields = fields
    }

    /// Fields as a stored form holds them (`StoredRecord`).
    init(fields: [String: String]) {
        self.fields = fields
    }

    /// True when no URL has a `Cookie` field.
    public var isEmpty: Bool { fields.isEmpty }

    /// The `Cookie` field a request to `url` carries, nil when none was given for it.
    public func field(for url: RemoteURL) -> String? {
        fields[url.absoluteString]
    }

    /// One `URL<TAB>FIELD` line per URL, sorted: how the SQLite store keeps them. A URL holds no
    /// space or control character (`RemoteURL`) and a field none either (`CookieJar`), so
    /// neither holds a tab or a line break.
    public var storedForm: String {
        fields.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)\n" }.joined()
    }

    /// Reads `storedForm` back.
    /// - Throws: `.store` for a line without a tab (the text is not quoted: it holds credentials).
    public init(storedForm text: String) throws(HaulError) {
        var fields: [String: String] = [:]
        for (index, line) in text.split(separator: "\n").enumerated() {
            guard let tab = line.firstIndex(of: "\t") else {
                throw HaulError(.store, "unreadable stored cookies: line \(index + 1) is not URL, tab, field")
            }
            fields[String(line[..<tab])] = String(line[line.index(after: tab)...])
        }
        self.fields = fields
    }

    /// `SourceCookies(N URLs)`: how many URLs have a field, never a value.
    public var description: String { "SourceCookies(\(fields.count) URL\(fields.count == 1 ? "" : "s"))" }
    /// The same as `description`: no value shown.
    public var debugDescription: String { description }
    /// Only the number of URLs, so `dump` and debuggers show no cookie.
    public var customMirror: Mirror {
        Mirror(self, children: ["urls": fields.count])
    }
}
