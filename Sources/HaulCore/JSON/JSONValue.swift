/// Any JSON value, for protocols whose parameters are not one fixed shape (aria2's JSON-RPC:
/// positional parameters, ids that are strings, numbers or null and must be echoed as given).
public enum JSONValue: Sendable, Hashable, Decodable {
    /// JSON's `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A whole number that fits in 64 bits (`JSONParser` reads `1.0` and `1e3` as such too).
    case integer(Int64)
    /// Any other number: one with a fraction, or a whole number `integer` does not take (beyond
    /// 64 bits, or 2^53 or more written with a fraction or exponent).
    case number(Double)
    /// A string, escapes decoded.
    case string(String)
    /// An array, items in order.
    case array([JSONValue])
    /// An object by key; where a key is repeated, the parser keeps the first.
    case object([String: JSONValue])

    /// Decodes whatever value the decoder holds, trying each kind in turn: null, a Boolean, a
    /// 64-bit integer, any other number, a string, an array, then an object. Throws the
    /// decoder's error when it is none of them.
    ///
    /// A `Decoder` cannot say which kind it holds, only refuse the wrong one, and not always with
    /// a `DecodingError` (Foundation's `JSONDecoder` refuses some numbers, such as `1.5e-3`,
    /// with an error of its own): an error from any kind but the last says only that the value
    /// is not of that kind, so nothing is lost when the next kind is tried. The object's error is
    /// thrown.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
            return
        }
        let kinds: [() throws -> JSONValue] = [
            { .bool(try container.decode(Bool.self)) },
            { .integer(try container.decode(Int64.self)) },
            { .number(try container.decode(Double.self)) },
            { .string(try container.decode(String.self)) },
            { .array(try container.decode([JSONValue].self)) },
        ]
        for kind in kinds {
            do {
                self = try kind()
                return
            } catch {
                continue
            }
        }
        self = .object(try container.decode([String: JSONValue].self))
    }

    /// The text when this is a string; nil for any other kind.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The items when this is an array; nil for any other kind.
    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The fields when this is an object; nil for any other kind.
    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The value when this is an integer; nil for any other kind, `number` included.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// Writes the value as JSON, object keys sorted.
    public func write(to json: inout JSONWriter) {
        switch self {
        case .null: json.raw("null")
        case .bool(let value): json.raw(value ? "true" : "false")
        case .integer(let value): json.raw(String(value))
        case .number(let value): json.number(value)
        case .string(let value): json.string(value)
        case .array(let values):
            json.array(values) { json, value in value.write(to: &json) }
        case .object(let fields):
            json.object { json in
                for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                    json.key(named: key)
                    value.write(to: &json)
                }
            }
        }
    }
}
