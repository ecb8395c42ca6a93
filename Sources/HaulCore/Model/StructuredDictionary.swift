/// Just enough of RFC 8941 (Structured Field Values) to read a Dictionary such as `Repr-Digest`:
/// every member is parsed by the grammar (so a malformed field fails as a whole, as the RFC
/// asks), and what is kept of each is its key and, when its value is a byte sequence, the bytes.
/// Parameters, inner lists and other item types are checked and skipped.
enum StructuredDictionary {
    /// The members in order, a byte sequence's bytes or nil for any other value; nil when the
    /// text is not a valid dictionary.
    static func parse(_ text: String) -> [(key: String, bytes: [UInt8]?)]? {
        var scanner = Scanner(Array(text.utf8))
        scanner.skipSpaces()
        var members: [(key: String, bytes: [UInt8]?)] = []
        while !scanner.atEnd {
            guard let key = scanner.key() else { return nil }
            var bytes: [UInt8]?
            if scanner.take(UInt8(ascii: "=")) {
                if scanner.peek == UInt8(ascii: "(") {
                    guard scanner.innerList() else { return nil }
                } else {
                    guard let item = scanner.bareItem() else { return nil }
                    if case .bytes(let decoded) = item { bytes = decoded }
                }
            }
            guard scanner.parameters() else { return nil }
            members.append((key, bytes))
            scanner.skipOptionalWhitespace()
            if scanner.atEnd { break }
            guard scanner.take(UInt8(ascii: ",")) else { return nil }
            scanner.skipOptionalWhitespace()
            // A trailing comma is an error.
            if scanner.atEnd { return nil }
        }
        return members
    }

    struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        mutating func skipSpaces() {
            while peek == UInt8(ascii: " ") { index += 1 }
        }

        mutating func skipOptionalWhitespace() {
            while peek == UInt8(ascii: " ") || peek == UInt8(ascii: "\t") { index += 1 }
        }

        /// `( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`
        mutating func key() -> String? {
            guard let first = peek, isLowercase(first) || first == UInt8(ascii: "*") else { return nil }
            let start = index
            while let byte = peek, isLowercase(byte) || isDigit(byte) || "_-.*".utf8.contains(byte) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// `;key[=bare-item]`, any number.
        mutating func parameters() -> Bool {
            while take(UInt8(ascii: ";")) {
                skipSpaces()
                guard key() != nil else { return false }
                if take(UInt8(ascii: "=")), bareItem() == nil { return false }
            }
            return true
        }

        /// `( item *( 1*SP item ) *SP ) parameters`
        mutating func innerList() -> Bool {
            guard take(UInt8(ascii: "(")) else { return false }
            while !atEnd {
                skipSpaces()
                if take(UInt8(ascii: ")")) { return parameters() }
                guard bareItem() != nil, parameters() else { return false }
                guard peek == UInt8(ascii: " ") || peek == UInt8(ascii: ")") else { return false }
            }
            return false
        }

        enum Item {
            case bytes([UInt8])
            case other
        }

        /// Any bare item: a byte sequence's bytes, or just that it was valid; nil when it is not.
        mutating func bareItem() -> Item? {
            guard let first = peek else { return nil }
            switch first {
            case UInt8(ascii: ":"):
                index += 1
                let start = index
                while let byte = peek, byte != UInt8(ascii: ":") {
                    guard Base64.value(of: byte) != nil || byte == UInt8(ascii: "=") else { return nil }
                    index += 1
                }
                guard take(UInt8(ascii: ":")), let decoded = Base64.decode(bytes[start..<(index - 1)]) else {
                    return nil
                }
                return .bytes(decoded)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return number() ? .other : nil
            case UInt8(ascii: "@"):
                index += 1
                return number() ? .other : nil
            case UInt8(ascii: "\""):
                return string() ? .other : nil
            case UInt8(ascii: "%"):
                index += 1
                return string() ? .other : nil
            case UInt8(ascii: "?"):
                index += 1
                guard let value = peek, value == UInt8(ascii: "0") || value == UInt8(ascii: "1") else { return nil }
                index += 1
                return .other
            case UInt8(ascii: "*"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
                index += 1
                while let byte = peek, isTokenCharacter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/")
                {
                    index += 1
                }
                return .other
            default:
                return nil
            }
        }

        /// An integer or decimal: `-`, digits, at most one `.` followed by digits.
        mutating func number() -> Bool {
            _ = take(UInt8(ascii: "-"))
            var digits = 0
            while let byte = peek, isDigit(byte) {
                index += 1
                digits += 1
            }
            guard digits > 0 else { return false }
            if take(UInt8(ascii: ".")) {
                var fraction = 0
                while let byte = peek, isDigit(byte) {
                    index += 1
                    fraction += 1
                }
                return fraction > 0
            }
            return true
        }

        /// `"..."` of printable ASCII, `\"` and `\\` escaped.
        mutating func string() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard let escaped = peek, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else {
                        return false
                    }
                    index += 1
                case 0x20...0x7E:
                    continue
                default:
                    return false
                }
            }
            return false
        }

        func isLowercase(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        func isTokenCharacter(_ byte: UInt8) -> Bool {
            isLowercase(byte) || isDigit(byte) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
