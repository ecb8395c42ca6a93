/// Ordered header fields with case-insensitive lookup; the transport-neutral form the core reads.
public struct HTTPHeaderList: Hashable, Codable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public struct Field: Hashable, Codable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

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

    public init(_ fields: [Field] = []) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field of that name with one value.
    public mutating func replace(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    public mutating func remove(name: String) {
        let lowered = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lowered }
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// The first value of a field, trimmed.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name.lowercased() == lowered }?.value.trimmingSpaces()
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

/// The part of an HTTP response the core decides on: status and headers, no body.
public struct ResponseHead: Hashable, Sendable {
    public var status: Int
    public var headers: HTTPHeaderList
    /// The URL that answered, after redirects.
    public var url: String
    /// The connection each request of this exchange went over: the redirects the transport
    /// followed first, the answer last. Empty when the transport cannot tell.
    public var connections: [ConnectionUse]

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

    public init(connection: Int, isFirst: Bool, tls: Bool, httpVersion: String) {
        self.connection = connection
        self.isFirst = isFirst
        self.tls = tls
        self.httpVersion = httpVersion
    }
}
