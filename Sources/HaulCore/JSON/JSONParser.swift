/// A strict JSON parser (RFC 8259) straight into `JSONValue`.
///
/// aria2's JSON-RPC arrives as untyped JSON; decoding it through `Decodable` tried each type in
/// turn and threw for every miss, which cost 88 % of the daemon's CPU on a `system.multicall` of
/// adds. This reads each byte once. Hostile input is bounded: nesting deeper than `maxDepth` is
/// refused rather than recursed into, and every error names the byte offset.
public struct JSONParser {
    /// Why the bytes could not be read, and where.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// Where reading stopped, in bytes from the start of the input.
        public var offset: Int
        /// What was wrong there (`expected a string`, `unterminated string`); the parser's own
        /// reasons never quote the input.
        public var reason: String
        /// The reason with its offset, as an error message: `invalid JSON at byte 12: expected ':'`.
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Arrays and objects nested deeper than this are refused (each level is a stack frame).
    public static let maxDepth = 256

    private let bytes: [UInt8]
    private var index = 0
    /// Arrays and objects open around the reader (`readObject`, `readArray`).
    private var depth = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The one value `bytes` hold, with nothing but whitespace around it.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the value") }
        return value
    }

    private func failure(_ reason: String) -> Failure {
        Failure(offset: index, reason: reason)
    }

    // MARK: Reading a known shape, without the tree

    /// A parser that reads a value of a known shape field by field (`readObject`, `readString`,
    /// ...), with no `JSONValue` tree and no dictionary between the bytes and the result: how a
    /// stored record is read (`StoredRecord`), a thousand per listing.
    public init(bytes: [UInt8]) {
        self.init(bytes)
        skipWhitespace()
    }

    /// Reads an object: `field` is called with each key and must read (or `skipValue`) its value.
    public mutating func readObject(_ field: (inout JSONParser, String) throws(Failure) -> Void) throws(Failure) {
        try fields(field)
        skipWhitespace()
    }

    /// Reads an array: `element` is called for each item and must read (or skip) it.
    public mutating func readArray(_ element: (inout JSONParser) throws(Failure) -> Void) throws(Failure) {
        try items(open: UInt8(ascii: "["), close: UInt8(ascii: "]"), element)
        skipWhitespace()
    }

    /// Reads a string, escapes decoded; throws when the next value is not a string.
    public mutating func readString() throws(Failure) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string") }
        let text = try string()
        skipWhitespace()
        return text
    }

    /// An integer, as `parse` reads one (`1.0` is 1).
    public mutating func readInteger() throws(Failure) -> Int64 {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "-") || isDigit(bytes[index]) else {
            throw failure("expected an integer")
        }
        let start = index
        guard case .integer(let value) = try number() else {
            throw Failure(offset: start, reason: "expected an integer")
        }
        skipWhitespace()
        return value
    }

    /// Reads `true` or `false`; throws when the next value is neither.
    public mutating func readBool() throws(Failure) -> Bool {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        let value: Bool
        switch bytes[index] {
        case UInt8(ascii: "t"):
            try literal("true")
            value = true
        case UInt8(ascii: "f"):
            try literal("false")
            value = false
        default: throw failure("expected true or false")
        }
        skipWhitespace()
        return value
    }

    /// Reads a `null` if one comes next: whether it did.
    public mutating func readNull() throws(Failure) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "n") else { return false }
        try literal("null")
        skipWhitespace()
        return true
    }

    /// Reads past one value of any kind (a key this reader does not know).
    public mutating func skipValue() throws(Failure) {
        _ = try value()
        skipWhitespace()
    }

    /// Where the reader is, in bytes from the start.
    public var offset: Int { index }

    /// Nothing but whitespace is left.
    public func finish() throws(Failure) {
        guard index == bytes.count else { throw failure("unexpected data after the value") }
    }

    // MARK: Scanning

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value() throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            // Pairs first, then one dictionary of the right size: growing it key by key rehashed
            // every key several times.
            var pairs: [(String, JSONValue)] = []
            try fields { json, key throws(Failure) in pairs.append((key, try json.value())) }
            // A repeated key: the first one wins, as with Foundation's decoder.
            return .object(Dictionary(pairs, uniquingKeysWith: { first, _ in first }))
        case UInt8(ascii: "["):
            var values: [JSONValue] = []
            try items(open: UInt8(ascii: "["), close: UInt8(ascii: "]")) { json throws(Failure) in
                values.append(try json.value())
            }
            return .array(values)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    /// An object's members: each key read, then `field` reads its value.
    private mutating func fields(_ field: (inout JSONParser, String) throws(Failure) -> Void) throws(Failure) {
        try items(open: UInt8(ascii: "{"), close: UInt8(ascii: "}")) { json throws(Failure) in
            guard json.index < json.bytes.count, json.bytes[json.index] == UInt8(ascii: "\"") else {
                throw json.failure("expected a string key")
            }
            let key = try json.string()
            json.skipWhitespace()
            guard json.index < json.bytes.count, json.bytes[json.index] == UInt8(ascii: ":") else {
                throw json.failure("expected ':'")
            }
            json.index += 1
            json.skipWhitespace()
            try field(&json, key)
        }
    }

    /// An array's or object's items between `open` and `close`, separated by commas: the one
    /// place that counts nesting (bounded at `maxDepth`) and checks the separators.
    private mutating func items(open: UInt8, close: UInt8, _ item: (inout JSONParser) throws(Failure) -> Void)
        throws(Failure)
    {
        guard index < bytes.count, bytes[index] == open else {
            throw failure(open == UInt8(ascii: "{") ? "expected an object" : "expected an array")
        }
        guard depth < Self.maxDepth else { throw failure("nested deeper than \(Self.maxDepth)") }
        depth += 1
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == close {
            index += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            try item(&self)
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case close:
                index += 1
                depth -= 1
                return
            default: throw failure(close == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("unexpected end of input") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    private mutating func string() throws(Failure) -> String {
        index += 1
        let start = index
        // The common case: no escapes, so the bytes are the string's.
        var ascii = true
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
            guard bytes[index] >= 0x20 else { throw failure("a control character in a string") }
            if bytes[index] >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw failure("unterminated string") }
        if ascii, bytes[index] == UInt8(ascii: "\"") {
            // ASCII is UTF-8 already: made from the input itself, with no copy and no check
            // (the copy and the generic check were a third of reading a stored record).
            let end = index
            index += 1
            return bytes.withUnsafeBufferPointer {
                String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self)
            }
        }
        var utf8 = Array(bytes[start..<index])
        while bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\") {
                try escape(into: &utf8)
            } else {
                guard bytes[index] >= 0x20 else { throw failure("a control character in a string") }
                utf8.append(bytes[index])
                index += 1
            }
            guard index < bytes.count else { throw failure("unterminated string") }
        }
        index += 1
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw Failure(offset: start, reason: "a string that is not UTF-8")
        }
        return text
    }

    private mutating func escape(into utf8: inout [UInt8]) throws(Failure) {
        index += 1
        guard index < bytes.count else { throw failure("unterminated string") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else {
                    throw failure("a lone surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("a lone surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid \\u escape") }
            utf8.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw failure("an invalid escape")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("unterminated string") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("an invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// An integer when the literal is one that fits in 64 bits, or a whole number written with a
    /// fraction or exponent that fits exactly (as Foundation's decoder reads `1.0` as 1); else a
    /// double.
    private mutating func number() throws(Failure) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("expected a digit in the exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, index - start <= 18 {
            // Up to 18 digits always fit: read without making a string.
            var value: Int64 = 0
            for byte in bytes[start..<index] where byte != UInt8(ascii: "-") {
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return .integer(bytes[start] == UInt8(ascii: "-") ? -value : value)
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text) else { throw Failure(offset: start, reason: "a number out of range") }
        if double.rounded() == double, abs(double) < 9.007_199_254_740_992e15 { return .integer(Int64(double)) }
        return .number(double)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
