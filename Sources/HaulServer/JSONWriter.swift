import NIOCore

/// Writes JSON straight into a `ByteBuffer`. Listing ten thousand downloads through Foundation's
/// `JSONEncoder` took most of the request's time (boxing every value, sorting every key); the
/// hot shapes (`DownloadView`) write themselves with this instead.
struct JSONWriter {
    var buffer = ByteBuffer()
    private var needsComma = false

    mutating func array<S: Sequence>(_ items: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        buffer.writeInteger(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { buffer.writeInteger(UInt8(ascii: ",")) }
            first = false
            needsComma = false
            write(&self, item)
        }
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    mutating func object(_ fields: (inout JSONWriter) -> Void) {
        buffer.writeInteger(UInt8(ascii: "{"))
        needsComma = false
        fields(&self)
        buffer.writeInteger(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func key(_ name: StaticString) {
        if needsComma { buffer.writeInteger(UInt8(ascii: ",")) }
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeStaticString(name)
        buffer.writeStaticString("\":")
        needsComma = true
    }

    mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        guard let value else { return null() }
        buffer.writeInteger(UInt8(ascii: "\""))
        // Nearly every value (ids, URLs, paths) needs no escaping: copy it whole.
        guard value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            buffer.writeString(value)
            buffer.writeInteger(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                buffer.writeStaticString("\\u00")
                buffer.writeInteger(hex[Int(byte >> 4)])
                buffer.writeInteger(hex[Int(byte & 0xF)])
            default: buffer.writeInteger(byte)
            }
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    mutating func field(_ name: StaticString, _ value: Int64?) {
        key(name)
        guard let value else { return null() }
        buffer.writeString(String(value))
    }

    mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        buffer.writeString(value.isFinite ? String(value) : "0")
    }

    mutating func field(_ name: StaticString, object: ((inout JSONWriter) -> Void)?) {
        key(name)
        guard let object else { return null() }
        self.object(object)
    }

    private mutating func null() {
        buffer.writeStaticString("null")
    }
}

extension DownloadView {
    /// Every key, `null` included (scripts rely on `.error` and `.totalLength` being there), in
    /// sorted order.
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("completedLength", completedLength)
            json.field("connections", Int64(connections))
            json.field("createdAt", createdAt)
            json.field("directory", directory)
            json.field("error", object: error.map { error in { json in
                json.field("code", error.code)
                json.field("message", error.message)
            } })
            json.field("fileName", fileName)
            json.field("id", id)
            json.field("maxBytesPerSecond", maxBytesPerSecond)
            json.field("maxConnections", Int64(maxConnections))
            json.field("path", path)
            json.field("priority", Int64(priority))
            json.field("speed", speed)
            json.field("status", status)
            json.field("totalLength", totalLength)
            json.field("url", url)
        }
    }
}
