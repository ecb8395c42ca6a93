/// Turns whatever a server or URL suggests into a plain file name that stays inside the
/// destination directory: no path separators, no `.`/`..`, no control characters, no hidden
/// files, at most `maxBytes`. Rule 5 of DESIGN.md rests on this.
public enum FileNameSanitizer {
    /// The name used when neither the server nor the URL gives one.
    public static let fallback = "download"
    /// The longest name in UTF-8 bytes: `NAME.part` must fit the 255-byte limit of file systems
    /// (a longer one fails at the first write, after the request was made).
    public static let maxBytes = 255 - ".part".utf8.count

    /// The safe form of `suggested`, or nil when nothing usable is left.
    public static func sanitize(_ suggested: String) -> String? {
        // Keep only what follows the last separator of either kind: "../../x" and "/etc/passwd"
        // become "x" and "passwd".
        let lastComponent = suggested.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in lastComponent.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value) { continue }
            scalars.append(scalar)
        }
        var name = String(scalars)
        // Leading dots would make "..", "." or a hidden file; trailing dots and spaces confuse
        // other systems. Neither carries meaning worth keeping.
        while let first = name.first, first == "." || first == " " { name.removeFirst() }
        while let last = name.last, last == " " || last == "." { name.removeLast() }
        guard !name.isEmpty else { return nil }
        return truncate(name)
    }

    /// Shortens to `maxBytes` of UTF-8, keeping a short extension.
    static func truncate(_ name: String) -> String {
        guard name.utf8.count > maxBytes else { return name }
        var ext = ""
        // At most 16 characters, and at most half the limit in bytes: one character may be
        // hundreds of bytes (a letter and its combining marks), and such an "extension" is none.
        if let dot = name.lastIndex(of: "."), name.distance(from: dot, to: name.endIndex) <= 16,
            name.utf8.distance(from: dot, to: name.endIndex) <= maxBytes / 2
        {
            ext = String(name[dot...])
        }
        var stem = ext.isEmpty ? name : String(name[..<name.lastIndex(of: ".")!])
        while !stem.isEmpty, stem.utf8.count + ext.utf8.count > maxBytes { stem.removeLast() }
        return stem + ext
    }

    /// The name for a download: the user's choice, else the server's, else the URL's, else the fallback.
    public static func chooseName(explicit: String?, contentDisposition: String?, url: RemoteURL) -> String {
        if let explicit { return explicit }
        if let header = contentDisposition, let suggested = ContentDisposition(parsing: header)?.fileName,
            let name = sanitize(suggested)
        {
            return name
        }
        if let last = url.lastPathComponent, let name = sanitize(last) { return name }
        return fallback
    }

    /// Alternative names for when `name` is taken: "file.iso" -> "file.1.iso", "file.2.iso", ...
    /// The number survives shortening: a name at the limit loses stem, never its ".N".
    public static func alternative(_ name: String, attempt: Int) -> String {
        var stem = name
        var ext = ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            stem = String(name[..<dot])
            ext = String(name[dot...])
        }
        let suffix = ".\(attempt)" + ext
        guard suffix.utf8.count < maxBytes else { return truncate(stem + suffix) }
        while !stem.isEmpty, stem.utf8.count + suffix.utf8.count > maxBytes { stem.removeLast() }
        return stem + suffix
    }
}

/// The parts of a `Content-Disposition` header (RFC 6266) that name a file.
public struct ContentDisposition: Hashable, Sendable {
    /// The disposition type, lowercased: `attachment`, `inline` or another token.
    public var type: String
    /// The parameters by lowercased name (`filename`, `filename*`), quoted values unquoted; of two with
    /// one name, the later wins.
    public var parameters: [String: String]

    /// Parses a field value; nil when it does not start with a type. Reading stops at the first
    /// parameter that is not `name=value`.
    public init?(parsing header: String) {
        var parser = HeaderParameterParser(Array(header.utf8))
        guard let type = parser.token(), !type.isEmpty else { return nil }
        self.type = type.lowercased()
        var parameters: [String: String] = [:]
        while parser.skip(";") {
            guard let name = parser.token(), parser.skip("=") else { break }
            let value = parser.quotedString() ?? parser.token() ?? ""
            parameters[name.lowercased()] = value
        }
        self.parameters = parameters
    }

    /// `filename*` (RFC 5987, UTF-8 percent-encoded) wins over `filename`.
    public var fileName: String? {
        if let extended = parameters["filename*"], let decoded = Self.decodeExtended(extended) { return decoded }
        return parameters["filename"]
    }

    static func decodeExtended(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        let bytes = PercentDecoding.decode(parts[2])
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }
}

/// A small cursor over `token`, `quoted-string` and separators, as header grammars use them.
struct HeaderParameterParser {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    mutating func skip(_ character: Character) -> Bool {
        skipSpaces()
        guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
        index += 1
        skipSpaces()
        return true
    }

    mutating func token() -> String? {
        skipSpaces()
        let start = index
        while index < bytes.count, !";=,\" \t".utf8.contains(bytes[index]) { index += 1 }
        guard index > start else { return nil }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func quotedString() -> String? {
        skipSpaces()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        var out: [UInt8] = []
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
            out.append(bytes[index])
            index += 1
        }
        if index < bytes.count { index += 1 }
        return String(decoding: out, as: UTF8.self)
    }
}
