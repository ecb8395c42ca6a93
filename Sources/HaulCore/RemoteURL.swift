/// A checked http(s) URL. Parsing is deliberately strict and Foundation-free: a download manager
/// should refuse `ftp://`, `file:` and typos up front, with a message naming the problem.
public struct RemoteURL: Hashable, Codable, Sendable, CustomStringConvertible {
    public let absoluteString: String
    public let scheme: String
    public let host: String
    /// Path without query or fragment, still percent-encoded; "/" when empty.
    public let path: String

    /// Scans UTF-8 bytes, not Characters: every delimiter is ASCII, and the store parses every
    /// stored URL again when it lists ten thousand downloads.
    public init(_ text: String) throws(HaulError) {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else { throw HaulError(.badURL, "empty URL") }
        let bytes = trimmed.utf8
        guard let schemeEnd = Self.find(Array("://".utf8), in: bytes) else {
            throw HaulError(.badURL, "'\(trimmed)' is not a URL (expected http:// or https://)")
        }
        let scheme = trimmed[..<schemeEnd].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HaulError(.unsupportedScheme, "unsupported scheme '\(scheme)' in \(trimmed) (only http and https)")
        }
        let restStart = bytes.index(schemeEnd, offsetBy: 3)
        let rest = bytes[restStart...]
        let authorityEnd = rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? rest.endIndex
        var host = bytes[restStart..<authorityEnd]
        if let at = host.lastIndex(of: UInt8(ascii: "@")) { host = host[host.index(after: at)...] }
        if host.first == UInt8(ascii: "[") {
            guard let close = host.firstIndex(of: UInt8(ascii: "]")) else { throw HaulError(.badURL, "bad IPv6 host in \(trimmed)") }
            try Self.checkPort(host[host.index(after: close)...], in: trimmed)
            host = host[...close]
        } else if let colon = host.firstIndex(of: UInt8(ascii: ":")) {
            try Self.checkPort(host[colon...], in: trimmed)
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw HaulError(.badURL, "no host in \(trimmed)") }
        guard !bytes.contains(where: { $0 == 0x20 || $0 < 0x20 || $0 == 0x7f }) else {
            throw HaulError(.badURL, "URL contains spaces or control characters: \(trimmed)")
        }
        let pathAndMore = bytes[authorityEnd...]
        let pathEnd = pathAndMore.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? pathAndMore.endIndex
        let path = String(trimmed[authorityEnd..<pathEnd])
        self.absoluteString = trimmed
        self.scheme = scheme
        self.host = String(trimmed[host.startIndex..<host.endIndex])
        self.path = path.isEmpty ? "/" : path
    }

    private static func find(_ needle: [UInt8], in bytes: String.UTF8View) -> String.Index? {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index...].starts(with: needle) { return index }
            index = bytes.index(after: index)
        }
        return nil
    }

    private static func checkPort(_ text: Substring.UTF8View, in url: String) throws(HaulError) {
        guard !text.isEmpty else { return }
        guard text.first == UInt8(ascii: ":") else { throw HaulError(.badURL, "bad host in \(url)") }
        let digits = text.dropFirst()
        let value = Int(Substring(digits))
        guard digits.isEmpty || (digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) && (value.map { $0 > 0 && $0 < 65536 } ?? false)) else {
            throw HaulError(.badURL, "bad port '\(Substring(digits))' in \(url)")
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
