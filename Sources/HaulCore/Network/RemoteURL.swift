/// A checked http(s) URL. Parsing is deliberately strict and Foundation-free: a download manager
/// should refuse `ftp://`, `file:` and typos up front, with a message naming the problem.
///
/// `user:password@` in the URL is taken out: it goes to `credentials` (percent-decoded) and never
/// into `absoluteString`, which is printed in errors, `--json`, logs and the daemon's API, and is
/// stored as the download's identity. `credentials` is no part of equality, hashing or the
/// `Codable` form.
public struct RemoteURL: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The URL without its userinfo.
    public let absoluteString: String
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// The host as written, case kept: a name, an IPv4 address, or an IPv6 address in brackets.
    public let host: String
    /// Path without query or fragment, still percent-encoded; "/" when empty.
    public let path: String
    /// The port written in the URL, if any.
    public let port: Int?
    /// `host[:port]` as written (brackets of an IPv6 address included), without userinfo.
    public let authority: String
    /// From the URL's userinfo (`user:password@`), percent-decoded; nil when it has none.
    public var credentials: Credentials?

    /// The longest URL accepted, in bytes: more than any server takes (most stop at 8 KiB of
    /// request line), and a daemon must not queue, store and log a megabyte per "URL".
    public static let maxLength = 8192

    /// Scans UTF-8 bytes, not Characters: every delimiter is ASCII, and the store parses every
    /// stored URL again when it lists ten thousand downloads.
    public init(_ text: String) throws(HaulError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else { throw HaulError(.badURL, "empty URL") }
        guard trimmed.utf8.count <= Self.maxLength else {
            throw HaulError(.badURL, "URL too long: \(trimmed.utf8.count) bytes, at most \(Self.maxLength) (8 KiB)")
        }
        let bytes = trimmed.utf8
        guard let schemeEnd = Self.find(Array("://".utf8), in: bytes) else {
            throw HaulError(.badURL, "'\(Self.redacted(trimmed))' is not a URL (expected http:// or https://)")
        }
        let scheme = trimmed[..<schemeEnd].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HaulError(
                .unsupportedScheme, "unsupported scheme '\(scheme)' in \(Self.redacted(trimmed)) (only http and https)")
        }
        let restStart = bytes.index(schemeEnd, offsetBy: 3)
        let rest = bytes[restStart...]
        let authorityEnd =
            rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? rest.endIndex
        var host = bytes[restStart..<authorityEnd]
        var credentials: Credentials?
        var clean = trimmed
        // What errors about the authority show: `clean` redacted (see `redacted`).
        var shown: String { Self.redacted(clean) }
        if let at = host.lastIndex(of: UInt8(ascii: "@")) {
            credentials = Credentials(userinfo: trimmed[restStart..<at])
            host = host[host.index(after: at)...]
            clean = String(trimmed[..<restStart]) + String(trimmed[host.startIndex...])
        }
        let authority = String(trimmed[host.startIndex..<host.endIndex])
        var port: Int?
        if host.first == UInt8(ascii: "[") {
            guard let close = host.firstIndex(of: UInt8(ascii: "]")) else {
                throw HaulError(.badURL, "bad IPv6 host in \(shown)")
            }
            port = try Self.checkPort(host[host.index(after: close)...], in: shown)
            host = host[...close]
        } else if let colon = host.firstIndex(of: UInt8(ascii: ":")) {
            port = try Self.checkPort(host[colon...], in: shown)
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw HaulError(.badURL, "no host in \(shown)") }
        guard !bytes.contains(where: { $0 == 0x20 || $0 < 0x20 || $0 == 0x7f }) else {
            throw HaulError(.badURL, "URL contains spaces or control characters: \(Self.redacted(trimmed))")
        }
        let pathAndMore = bytes[authorityEnd...]
        let pathEnd =
            pathAndMore.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? pathAndMore.endIndex
        let path = String(trimmed[authorityEnd..<pathEnd])
        self.absoluteString = clean
        self.scheme = scheme
        self.host = String(trimmed[host.startIndex..<host.endIndex])
        self.path = path.isEmpty ? "/" : path
        self.port = port
        self.authority = authority
        self.credentials = credentials
    }

    /// `text` with anything between `://` and the last `@` before a `?` or `#` replaced by
    /// `***`, for error messages about a URL that could not be parsed. Not only the
    /// authority's: a password with an unescaped `/` ends the authority early, and is hidden
    /// too (an `@` in a path is hidden along with it; no harm in an error message).
    ///
    /// A name of content (`hf://`, `oci://`, `s3://`) is shown as typed but for an `@` before its
    /// first `/`: there `@` is no credential but a revision or a digest (`hf://org/repo@v1`,
    /// `oci://ghcr.io/org/image@sha256:...`).
    static func redacted(_ text: String) -> String {
        guard let schemeRange = text.firstRange(of: "://") else { return text }
        let schemeEnd = schemeRange.upperBound
        let rest = text[schemeEnd...]
        var end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? rest.endIndex
        if ContentName.schemes.contains(text[..<schemeRange.lowerBound].lowercased()) {
            end = rest.firstIndex(of: "/") ?? end
        }
        guard let at = rest[..<end].lastIndex(of: "@") else { return text }
        return String(text[..<schemeEnd]) + "***" + String(text[at...])
    }

    /// Whether `host` is an IP address (four decimal bytes, or an IPv6 address) rather than a name:
    /// a cookie's domain must then match exactly, and an S3 endpoint goes path-style.
    static func isIPAddress(_ host: String) -> Bool {
        if host.hasPrefix("[") || host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The port a connection goes to: the URL's, else 80 or 443.
    public var effectivePort: Int { port ?? (scheme == "https" ? 443 : 80) }

    /// Scheme, host and port: where credentials may go (RFC 6454; host compared without case).
    public func hasSameOrigin(as other: RemoteURL) -> Bool {
        scheme == other.scheme && host.lowercased() == other.host.lowercased() && effectivePort == other.effectivePort
    }

    /// The target of a redirect's `Location`, which may be relative (RFC 3986 §5.2). The
    /// fragment is dropped. Credentials come only from `reference` itself, never from `self`.
    public func resolving(_ reference: String) throws(HaulError) -> RemoteURL {
        var ref = Substring(reference.trimmingSpaces())
        if let hash = ref.firstIndex(of: "#") { ref = ref[..<hash] }
        if let colon = ref.firstIndex(of: ":"), ref[colon...].hasPrefix("://"),
            ref[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
        {
            return try RemoteURL(String(ref))
        }
        if ref.hasPrefix("//") { return try RemoteURL(scheme + ":" + ref) }
        let origin = scheme + "://" + authority
        let baseQuery =
            absoluteString.firstIndex(of: "?").map { index in
                String(absoluteString[index...].prefix { $0 != "#" })
            } ?? ""
        if ref.isEmpty { return try RemoteURL(origin + path + baseQuery) }
        if ref.hasPrefix("?") { return try RemoteURL(origin + path + ref) }
        let queryStart = ref.firstIndex(of: "?") ?? ref.endIndex
        let refPath = ref[..<queryStart]
        let query = ref[queryStart...]
        let merged: String
        if refPath.hasPrefix("/") {
            merged = String(refPath)
        } else if let slash = path.lastIndex(of: "/") {
            merged = String(path[...slash]) + refPath
        } else {
            merged = "/" + refPath
        }
        return try RemoteURL(origin + Self.removeDotSegments(merged) + query)
    }

    /// RFC 3986 §5.2.4 on an absolute path.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    /// Equal when `absoluteString` is; `credentials` are not compared.
    public static func == (lhs: RemoteURL, rhs: RemoteURL) -> Bool { lhs.absoluteString == rhs.absoluteString }
    /// Hashes `absoluteString` alone, as `==` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(absoluteString) }

    private enum CodingKeys: String, CodingKey { case absoluteString, scheme, host, path }

    /// The same keys as before credentials existed; the URL is parsed again from `absoluteString`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .absoluteString)
        do {
            self = try RemoteURL(text)
        } catch {
            throw DecodingError.dataCorruptedError(
                forKey: .absoluteString, in: container, debugDescription: error.message)
        }
    }

    /// Encodes `absoluteString`, which decoding reads, and `scheme`, `host` and `path` beside it; never
    /// `credentials`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(absoluteString, forKey: .absoluteString)
        try container.encode(scheme, forKey: .scheme)
        try container.encode(host, forKey: .host)
        try container.encode(path, forKey: .path)
    }

    private static func find(_ needle: [UInt8], in bytes: String.UTF8View) -> String.Index? {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index...].starts(with: needle) { return index }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// `url`: the URL as errors show it, made only for an error (redacting costs more than parsing).
    private static func checkPort(_ text: Substring.UTF8View, in shown: @autoclosure () -> String) throws(HaulError)
        -> Int?
    {
        guard !text.isEmpty else { return nil }
        guard text.first == UInt8(ascii: ":") else { throw HaulError(.badURL, "bad host in \(shown())") }
        let digits = text.dropFirst()
        let value = Int(Substring(digits))
        guard
            digits.isEmpty
                || (digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) && (value.map { $0 > 0 && $0 < 65536 } ?? false))
        else {
            // The text read as a port is named only if the URL shown has it: when it was the
            // start of a password, it is not.
            let url = shown()
            let named = url.contains(String(Substring(digits))) ? " '\(Substring(digits))'" : ""
            throw HaulError(.badURL, "bad port\(named) in \(url)")
        }
        return value
    }

    /// The last non-empty path segment, percent-decoded: the name a file gets when the server
    /// suggests none. Nil for `/`.
    public var lastPathComponent: String? {
        guard let last = path.split(separator: "/").last else { return nil }
        return String(decoding: PercentDecoding.decode(Substring(last)), as: UTF8.self)
    }

    /// `absoluteString`: the URL without its userinfo.
    public var description: String { absoluteString }
}

enum PercentDecoding {
    /// Decodes `%XX` escapes into raw bytes; invalid escapes stay as they are.
    static func decode(_ text: Substring) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
