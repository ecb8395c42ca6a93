/// Any JSON value, for protocols whose parameters are not one fixed shape (aria2's JSON-RPC:
/// positional parameters, ids that are strings, numbers or null and must be echoed as given).
public enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

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
