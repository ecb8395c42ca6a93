/// Just enough XML for Metalink files, with no library: elements, attributes, text, the five
/// named entities and numeric character references, comments, processing instructions and
/// CDATA. A document type declaration is refused (no entity expansion, so no "billion laughs"),
/// and so are nesting deeper than `maxDepth` and more than `maxElements` elements.
public struct MiniXML: Hashable, Sendable {
    /// The element's name without its namespace prefix.
    public var name: String
    /// Its attributes by name without namespace prefix, values with entities decoded.
    public var attributes: [String: String]
    /// Its child elements, in document order.
    public var children: [MiniXML]
    /// Its text, character data of all its text nodes joined, entities decoded.
    public var text: String

    /// How many levels elements may nest, the root counting as one; a document nested deeper
    /// is refused.
    public static let maxDepth = 32
    /// The most elements a document may hold, at any depth; one more is refused.
    public static let maxElements = 200_000

    /// The children named `name`.
    public func all(_ name: String) -> [MiniXML] { children.filter { $0.name == name } }
    /// The first child named `name`, nil when there is none.
    public func first(_ name: String) -> MiniXML? { children.first { $0.name == name } }

    /// The document's root element.
    public static func parse(_ document: String) throws(HaulError) -> MiniXML {
        var parser = Parser(bytes: Array(document.utf8))
        return try parser.document()
    }

    struct Parser {
        let bytes: [UInt8]
        var index = 0
        var elements = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func error(_ what: String) -> HaulError {
            HaulError(.badRequest, "not a valid Metalink (XML): \(what) at byte \(index)")
        }

        func peek(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            guard index + needle.count <= bytes.count else { return false }
            return bytes[index..<(index + needle.count)].elementsEqual(needle)
        }

        mutating func skip(past text: String) throws(HaulError) {
            let needle = Array(text.utf8)
            while index + needle.count <= bytes.count {
                if bytes[index..<(index + needle.count)].elementsEqual(needle) {
                    index += needle.count
                    return
                }
                index += 1
            }
            throw error("no end '\(text)'")
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// Comments, processing instructions and spaces; a DOCTYPE is refused.
        mutating func skipMisc() throws(HaulError) {
            while true {
                skipSpace()
                if peek("<?") {
                    try skip(past: "?>")
                } else if peek("<!--") {
                    try skip(past: "-->")
                } else if peek("<!DOCTYPE") || peek("<!doctype") {
                    throw error("a document type declaration is not accepted")
                } else {
                    return
                }
            }
        }

        mutating func document() throws(HaulError) -> MiniXML {
            if peek("\u{FEFF}") { index += 3 }
            try skipMisc()
            guard peek("<") else { throw error("no root element") }
            let root = try element(depth: 0)
            try skipMisc()
            guard index == bytes.count else { throw error("content after the root element") }
            return root
        }

        mutating func name() throws(HaulError) -> String {
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/"), UInt8(ascii: "=")].contains(byte) {
                    break
                }
                index += 1
            }
            guard index > start else { throw error("a name was expected") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        static func local(_ name: String) -> String {
            name.split(separator: ":").last.map(String.init) ?? name
        }

        mutating func element(depth: Int) throws(HaulError) -> MiniXML {
            guard depth < MiniXML.maxDepth else { throw error("elements nested deeper than \(MiniXML.maxDepth)") }
            elements += 1
            guard elements <= MiniXML.maxElements else { throw error("more than \(MiniXML.maxElements) elements") }
            index += 1 // "<"
            let qualified = try name()
            var node = MiniXML(name: Self.local(qualified), attributes: [:], children: [], text: "")
            while true {
                skipSpace()
                guard index < bytes.count else { throw error("unterminated <\(qualified)>") }
                if peek("/>") {
                    index += 2
                    return node
                }
                if peek(">") {
                    index += 1
                    break
                }
                let attribute = try name()
                skipSpace()
                guard peek("=") else { throw error("attribute \(attribute) without a value") }
                index += 1
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'")
                else {
                    throw error("attribute \(attribute) without quotes")
                }
                let quote = bytes[index]
                index += 1
                let start = index
                while index < bytes.count, bytes[index] != quote { index += 1 }
                guard index < bytes.count else { throw error("unterminated attribute \(attribute)") }
                node.attributes[Self.local(attribute)] = try decode(bytes[start..<index])
                index += 1
            }
            // Content, up to the matching end tag.
            var text: [UInt8] = []
            while true {
                guard index < bytes.count else { throw error("<\(qualified)> is not closed") }
                if peek("</") {
                    index += 2
                    let closing = try name()
                    guard closing == qualified else { throw error("</\(closing)> closes <\(qualified)>") }
                    skipSpace()
                    guard peek(">") else { throw error("unterminated </\(closing)>") }
                    index += 1
                    node.text = try decode(text[...])
                    return node
                }
                if peek("<!--") {
                    try skip(past: "-->")
                } else if peek("<![CDATA[") {
                    index += 9
                    let start = index
                    try skip(past: "]]>")
                    // Escaped so that `decode` gives the characters back as they were.
                    for byte in bytes[start..<(index - 3)] {
                        if byte == UInt8(ascii: "&") { text += Array("&amp;".utf8) } else { text.append(byte) }
                    }
                } else if peek("<?") {
                    try skip(past: "?>")
                } else if peek("<!") {
                    throw error("a declaration is not accepted inside an element")
                } else if peek("<") {
                    node.children.append(try element(depth: depth + 1))
                } else {
                    text.append(bytes[index])
                    index += 1
                }
            }
        }

        /// Character data with its references decoded.
        func decode(_ raw: ArraySlice<UInt8>) throws(HaulError) -> String {
            guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
            var out: [UInt8] = []
            var position = raw.startIndex
            while position < raw.endIndex {
                guard raw[position] == UInt8(ascii: "&") else {
                    out.append(raw[position])
                    position += 1
                    continue
                }
                guard let end = raw[position...].firstIndex(of: UInt8(ascii: ";")), end - position <= 12 else {
                    throw error("a bare '&'")
                }
                let reference = String(decoding: raw[(position + 1)..<end], as: UTF8.self)
                let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
                if let value = named[reference] {
                    out += Array(value.utf8)
                } else if reference.hasPrefix("#") {
                    let digits = reference.dropFirst()
                    let value =
                        digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                    guard let value, let scalar = Unicode.Scalar(value) else {
                        throw error("a bad character reference &\(reference);")
                    }
                    out += Array(String(Character(scalar)).utf8)
                } else {
                    throw error("an unknown entity &\(reference);")
                }
                position = end + 1
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
