/// Writes JSON straight into bytes, keys in the order given (callers give them sorted, as
/// `JSONEncoder` with `.sortedKeys` would). Listing ten thousand downloads through Foundation's
/// `JSONEncoder` took most of the request's time (boxing every value, sorting every key); the
/// hot shapes (`DownloadView`, aria2's status objects) write themselves with this instead. Its
/// output is held byte-for-byte to `JSONEncoder`'s by `HaulServerTests`.
public struct JSONWriter {
    /// The JSON written so far, as UTF-8.
    public var bytes: [UInt8] = []
    private var needsComma = false

    /// Writes `items` as an array, each one written by `write` (one value per call).
    public mutating func array<S: Sequence>(_ items: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            needsComma = false
            write(&self, item)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object whose members `fields` writes: each a `key` and its value, or a `field`.
    public mutating func object(_ fields: (inout JSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        fields(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// A writer with nothing written yet.
    public init() {}

    /// Writes an object member's key, after a comma when a member came before; the value written
    /// next is its value. `name` is written as it is, not escaped: it must need no escaping.
    public mutating func key(_ name: StaticString) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        write(name)
        write("\":")
        needsComma = true
    }

    /// A member whose value is a string, or `null` when `value` is nil.
    public mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        guard let value else { return null() }
        string(value)
    }

    /// A key only known at run time (an option's name).
    public mutating func key(named name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = true
    }

    /// A member whose key is only known at run time (escaped as a string is), with a string value.
    public mutating func field(named name: String, _ value: String) {
        key(named: name)
        string(value)
    }

    /// A value written by `body` (an array, an already encoded value) under `name`.
    public mutating func field(_ name: StaticString, _ body: (inout JSONWriter) -> Void) {
        key(name)
        body(&self)
        needsComma = true
    }

    /// A string value, escaped as `JSONEncoder` escapes it.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        // Nearly every value (ids, URLs, paths) needs no escaping: copy it whole. Looked at in its
        // own storage, a plain loop: `utf8.contains(where:)` was a tenth of `tellActive`'s CPU.
        let copied = value.utf8.withContiguousStorageIfAvailable { text -> Bool in
            for byte in text where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                return false
            }
            bytes.append(contentsOf: text)
            return true
        }
        if copied == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): write("\\\"")
            case UInt8(ascii: "\\"): write("\\\\")
            case UInt8(ascii: "\n"): write("\\n")
            case UInt8(ascii: "\r"): write("\\r")
            case UInt8(ascii: "\t"): write("\\t")
            case 0x08: write("\\b")
            case 0x0C: write("\\f")
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                write("\\u00")
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A member whose value is an integer, or `null` when `value` is nil.
    public mutating func field(_ name: StaticString, _ value: Int64?) {
        key(name)
        guard let value else { return null() }
        write(String(value))
    }

    /// A member whose value is `true` or `false`.
    public mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        write(value ? "true" : "false")
    }

    /// A member whose value is a number, written as `number` writes it.
    public mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        number(value)
    }

    /// A number as `JSONEncoder` writes it: `1048576`, not `1048576.0`; 0 for what JSON cannot say.
    public mutating func number(_ value: Double) {
        guard value.isFinite else { return write("0") }
        let text = String(value)
        write(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
    }

    /// A member whose value is an object `object` writes (as `object(_:)` does), or `null` when
    /// `object` is nil.
    public mutating func field(_ name: StaticString, object: ((inout JSONWriter) -> Void)?) {
        key(name)
        guard let object else { return null() }
        self.object(object)
    }

    private mutating func null() {
        write("null")
    }

    /// Raw bytes the caller vouches for (a separator, an already encoded value).
    public mutating func raw(_ text: String) {
        write(text)
    }

    private mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func write(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
}
