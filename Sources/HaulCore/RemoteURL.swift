/// A checked http(s) URL. Parsing is deliberately strict and Foundation-free: a download manager
/// should refuse `ftp://`, `file:` and typos up front, with a message naming the problem.
public struct RemoteURL: Hashable, Codable, Sendable, CustomStringConvertible {
    public let absoluteString: String
    public let scheme: String
    public let host: String
    /// Path without query or fragment, still percent-encoded; "/" when empty.
    public let path: String

    public init(_ text: String) throws(HaulError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else { throw HaulError(.badURL, "empty URL") }
        guard let schemeEnd = trimmed.firstRange(of: "://") else {
            throw HaulError(.badURL, "'\(trimmed)' is not a URL (expected http:// or https://)")
        }
        let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HaulError(.unsupportedScheme, "unsupported scheme '\(scheme)' in \(trimmed) (only http and https)")
        }
        let rest = trimmed[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var host = Substring(authority)
        if let at = host.lastIndex(of: "@") { host = host[host.index(after: at)...] }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw HaulError(.badURL, "bad IPv6 host in \(trimmed)") }
            let after = host[host.index(after: close)...]
            try Self.checkPort(after, in: trimmed)
            host = host[...close]
        } else if let colon = host.firstIndex(of: ":") {
            try Self.checkPort(host[colon...], in: trimmed)
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw HaulError(.badURL, "no host in \(trimmed)") }
        guard !trimmed.contains(where: { $0 == " " || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } == true }) else {
            throw HaulError(.badURL, "URL contains spaces or control characters: \(trimmed)")
        }
        let pathAndMore = rest[authorityEnd...]
        let pathEnd = pathAndMore.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? pathAndMore.endIndex
        let path = String(pathAndMore[..<pathEnd])
        self.absoluteString = trimmed
        self.scheme = scheme
        self.host = String(host)
        self.path = path.isEmpty ? "/" : path
    }

    private static func checkPort(_ text: Substring, in url: String) throws(HaulError) {
        guard !text.isEmpty else { return }
        guard text.first == ":" else { throw HaulError(.badURL, "bad host in \(url)") }
        let digits = text.dropFirst()
        guard digits.isEmpty || (digits.allSatisfy(\.isNumber) && (Int(digits).map { $0 > 0 && $0 < 65536 } ?? false)) else {
            throw HaulError(.badURL, "bad port '\(digits)' in \(url)")
        }
    }

    /// The last non-empty path segment, percent-decoded: the name a file gets when the server
    /// suggests none. Nil for `/`.
    public var lastPathComponent: String? {
        guard let last = path.split(separator: "/").last else { return nil }
        return String(decoding: PercentDecoding.decode(Substring(last)), as: UTF8.self)
    }

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
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
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
