/// Ordered header fields with case-insensitive lookup; the transport-neutral form the core reads.
public struct HTTPHeaderList: Hashable, Codable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field: a name and its value.
    public struct Field: Hashable, Codable, Sendable {
        /// The field's name, its case as written; lookups ignore case.
        public var name: String
        /// The value as received or given (the subscript trims it).
        public var value: String
        /// A field with this name and value, stored as given.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Every field, in order, repeated names included.
    public private(set) var fields: [Field]

    /// A `Name: value` line as users write it (`haul get -H`, aria2's `header` option): spaces
    /// and tabs around both parts dropped; no empty name, no space in it, no line break in the value.
    public static func field(parsing line: String) throws(HaulError) -> Field {
        guard let colon = line.firstIndex(of: ":") else {
            throw HaulError(.usage, "header must look like 'Name: value' (got '\(line)')")
        }
        let name = String(line[..<colon]).trimmingSpaces()
        let value = String(line[line.index(after: colon)...]).trimmingSpaces()
        guard !name.isEmpty, !name.contains(" "), !value.contains("\r"), !value.contains("\n") else {
            throw HaulError(.usage, "header must look like 'Name: value' (got '\(line)')")
        }
        return Field(name: name, value: value)
    }

    /// A list of these fields, in this order; empty by default.
    public init(_ fields: [Field] = []) { self.fields = fields }

    /// A list written as a literal (`["Accept": "*/*"]`), its fields in the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field of that name with one value.
    public mutating func replace(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field of that name (compared without case).
    public mutating func remove(name: String) {
        let lowered = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lowered }
    }

    /// Whether there is a field of that name (compared without case).
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// The first value of a field, trimmed.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name.lowercased() == lowered }?.value.trimmingSpaces()
    }

    /// Iterates over the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

/// The part of an HTTP response the core decides on: status and headers, no body.
public struct ResponseHead: Hashable, Sendable {
    /// The HTTP status code (200, 206, 416, ...).
    public var status: Int
    /// The response's header fields, in order.
    public var headers: HTTPHeaderList
    /// The URL that answered, after redirects.
    public var url: String
    /// The connection each request of this exchange went over: the redirects the transport
    /// followed first, the answer last. Empty when the transport cannot tell.
    public var connections: [ConnectionUse]

    /// A response head; `connections` is empty by default (the transport could not tell).
    public init(status: Int, headers: HTTPHeaderList, url: String, connections: [ConnectionUse] = []) {
        self.status = status
        self.headers = headers
        self.url = url
        self.connections = connections
    }
}

/// The transport connection one request went over, as the transport saw it: what a download's
/// count of connections and TLS handshakes is made of (`TransferStats`).
public struct ConnectionUse: Hashable, Sendable {
    /// Tells the transport's connections apart over its whole life (never reused).
    public var connection: Int
    /// The request was the first answered on its connection: the connection was opened (a TCP
    /// connect, and on https a TLS handshake) for it.
    public var isFirst: Bool
    /// The connection is TLS to the origin (https, also through a proxy's tunnel).
    public var tls: Bool
    /// As the response said it: `HTTP/1.1`, `HTTP/2`.
    public var httpVersion: String

    /// One request's connection, as the transport reports it.
    public init(connection: Int, isFirst: Bool, tls: Bool, httpVersion: String) {
        self.connection = connection
        self.isFirst = isFirst
        self.tls = tls
        self.httpVersion = httpVersion
    }
}
