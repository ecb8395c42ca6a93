/// `DownloadRecord`'s `Codable` form, written and read by hand: the keys its `CodingKeys` name (a
/// nil optional left out, as `encodeIfPresent` leaves it), the nested types' own forms
/// (`RemoteURL`'s four keys, `HTTPHeaderList`'s `fields`, ...). Keys in declaration order; a
/// reader takes them in any order, as `JSONDecoder` does.
extension StoredRecord {
    /// Why a stored form could not be read: where, never the value (it may hold secrets).
    public struct FormError: Error, Sendable {
        /// `not JSON`, or where the JSON is not the stored form (with the byte offset when the
        /// parser found it); never the stored text.
        public var reason: String

        init(reason: String) {
            self.reason = reason
        }

        /// "not JSON", or where the JSON is not the form: never the text.
        init(failure: JSONParser.Failure, in bytes: [UInt8]) {
            do {
                _ = try JSONParser.parse(bytes)
                reason = "not the stored form: \(failure.reason) at byte \(failure.offset)"
            } catch {
                reason = "not JSON"
            }
        }
    }

    // MARK: Writing

    /// The record's `Codable` form as JSON text, what the `record` column holds: keys in
    /// declaration order, nil optionals left out, and never the request's credentials.
    public static func json(_ record: DownloadRecord) -> String {
        var json = JSONWriter()
        json.object { json in
            json.key("id")
            json.string(record.id.rawValue)
            json.key("request")
            write(record.request, to: &json)
            json.key("status")
            json.string(record.status.rawValue)
            json.optional("fileName", record.fileName)
            json.optional("finalURL", record.finalURL)
            if let validator = record.validator {
                json.key("validator")
                json.object { json in
                    json.optional("etag", validator.etag)
                    json.optional("lastModified", validator.lastModified)
                }
            }
            json.optional("totalLength", record.totalLength)
            if let digest = record.serverDigest {
                json.key("serverDigest")
                json.object { json in
                    json.key("checksum")
                    write(digest.checksum, to: &json)
                    json.key("field")
                    json.string(digest.field.rawValue)
                }
            }
            json.key("segments")
            json.array(record.segments) { json, segment in
                json.object { json in
                    json.integer("start", segment.start)
                    json.optional("end", segment.end)
                    json.integer("written", segment.written)
                }
            }
            if let error = record.error {
                json.key("error")
                json.object { json in
                    json.key("code")
                    json.string(error.code.rawValue)
                    json.key("message")
                    json.string(error.message)
                    json.optional("httpStatus", error.httpStatus.map(Int64.init))
                    json.optional("cause", error.cause)
                }
            }
            json.integer("createdAt", record.createdAt)
            json.integer("position", record.position)
        }
        return String(decoding: json.bytes, as: UTF8.self)
    }

    private static func write(_ request: DownloadRequest, to json: inout JSONWriter) {
        json.object { json in
            json.key("url")
            write(request.url, to: &json)
            json.key("mirrors")
            json.array(request.mirrors) { json, url in write(url, to: &json) }
            json.key("directory")
            json.string(request.directory)
            json.optional("fileName", request.fileName)
            if let range = request.range {
                json.key("range")
                json.object { json in
                    json.integer("start", range.start)
                    json.optional("end", range.end)
                }
            }
            if let checksum = request.checksum {
                json.key("checksum")
                write(checksum, to: &json)
            }
            json.key("headers")
            json.object { json in
                json.key("fields")
                json.array(request.headers.fields) { json, field in
                    json.object { json in
                        json.key("name")
                        json.string(field.name)
                        json.key("value")
                        json.string(field.value)
                    }
                }
            }
            json.optional("maxAttempts", request.maxAttempts.map(Int64.init))
            json.integer("priority", Int64(request.priority))
            json.integer("connections", Int64(request.connections))
            json.optional("maxBytesPerSecond", request.maxBytesPerSecond)
            json.field("timestamping", request.timestamping)
            json.field("remoteTime", request.remoteTime)
            if let pieces = request.pieceHashes {
                json.key("pieceHashes")
                json.object { json in
                    json.integer("length", pieces.length)
                    json.key("algorithm")
                    json.string(pieces.algorithm.rawValue)
                    json.key("hashes")
                    json.array(pieces.hashes) { json, hash in json.string(hash) }
                }
            }
            json.key("cookies")
            json.object { json in
                json.key("fields")
                json.object { json in
                    for (url, field) in request.cookies.fields.sorted(by: { $0.key < $1.key }) {
                        json.key(named: url)
                        json.string(field)
                    }
                }
            }
            json.field("growsConnections", request.growsConnections)
            if let composite = request.compositeChecksum {
                json.key("compositeChecksum")
                json.object { json in
                    json.key("algorithm")
                    json.string(composite.algorithm.rawValue)
                    json.key("runs")
                    json.array(composite.runs) { json, run in
                        json.object { json in
                            json.integer("length", run.length)
                            json.integer("count", Int64(run.count))
                        }
                    }
                    json.key("hex")
                    json.string(composite.hex)
                }
            }
            if let signing = request.signing {
                json.key("signing")
                json.object { json in
                    json.key("region")
                    json.string(signing.region)
                    json.key("service")
                    json.string(signing.service)
                }
            }
        }
    }

    private static func write(_ url: RemoteURL, to json: inout JSONWriter) {
        json.object { json in
            json.key("absoluteString")
            json.string(url.absoluteString)
            json.key("scheme")
            json.string(url.scheme)
            json.key("host")
            json.string(url.host)
            json.key("path")
            json.string(url.path)
        }
    }

    private static func write(_ checksum: Checksum, to json: inout JSONWriter) {
        json.object { json in
            json.key("algorithm")
            json.string(checksum.algorithm.rawValue)
            json.key("hex")
            json.string(checksum.hex)
        }
    }

    /// `StoredCredentials`' form.
    public static func json(_ credentials: Credentials) -> String {
        var json = JSONWriter()
        json.object { json in
            json.key("user")
            json.string(credentials.user)
            json.key("password")
            json.string(credentials.password)
        }
        return String(decoding: json.bytes, as: UTF8.self)
    }

    // MARK: Reading

    /// Reads the record's form, keys in any order; a key it does not know is skipped, as
    /// `JSONDecoder` skips it.
    public static func record(fromJSON text: String) throws(FormError) -> DownloadRecord {
        let bytes = Array(text.utf8)
        var json = JSONParser(bytes: bytes)
        var id: String?
        var request: DownloadRequest?
        var status: DownloadStatus?
        var segments: [Segment]?
        var createdAt: Int64?
        var position: Int64?
        var fileName: String?
        var finalURL: String?
        var validator: EntityValidator?
        var totalLength: Int64?
        var serverDigest: ServerDigest?
        var error: HaulError?
        do {
            try json.readObject { json, key throws(JSONParser.Failure) in
                switch key {
                case "id": id = try json.readString()
                case "request": request = try self.request(&json)
                case "status": status = try json.readKnown(DownloadStatus.self)
                case "fileName": fileName = try json.readOptionalString()
                case "finalURL": finalURL = try json.readOptionalString()
                case "validator": validator = try json.optional(self.validator)
                case "totalLength": totalLength = try json.readOptionalInteger()
                case "serverDigest": serverDigest = try json.optional(self.serverDigest)
                case "segments": segments = try self.segments(&json)
                case "error": error = try json.optional(self.error)
                case "createdAt": createdAt = try json.readInteger()
                case "position": position = try json.readInteger()
                default: try json.skipValue()
                }
            }
            try json.finish()
        } catch {
            throw FormError(failure: error, in: bytes)
        }
        guard let id, let request, let status, let segments, let createdAt, let position else {
            throw FormError(reason: "a record without its id, request, status, segments, createdAt or position")
        }
        var record = DownloadRecord(id: DownloadID(rawValue: id), request: request, createdAt: createdAt)
        record.status = status
        record.fileName = fileName
        record.finalURL = finalURL
        record.validator = validator
        record.totalLength = totalLength
        record.serverDigest = serverDigest
        record.segments = segments
        record.error = error
        record.position = position
        return record
    }

    private static func request(_ json: inout JSONParser) throws(JSONParser.Failure) -> DownloadRequest {
        let start = json.offset
        var url: RemoteURL?
        var mirrors: [RemoteURL] = []
        var directory: String?
        var connections: Int64?
        var priority: Int64?
        var headers: HTTPHeaderList?
        var fileName: String?
        var range: ByteRange?
        var checksum: Checksum?
        var maxAttempts: Int64?
        var rate: Int64?
        var timestamping = false
        var remoteTime = false
        var growsConnections = false
        var pieces: PieceHashes?
        var composite: CompositeChecksum?
        var signing: SigV4Scope?
        var cookies = SourceCookies()
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "url": url = try self.url(&json)
            case "mirrors":
                mirrors = try json.optional { json throws(JSONParser.Failure) in try json.readList(self.url) } ?? []
            case "directory": directory = try json.readString()
            case "fileName": fileName = try json.readOptionalString()
            case "range": range = try json.optional(self.span).map { ByteRange(start: $0.start, end: $0.end) }
            case "checksum": checksum = try json.optional(self.checksum)
            case "headers": headers = try self.headers(&json)
            case "maxAttempts": maxAttempts = try json.readOptionalInteger()
            case "priority": priority = try json.readInteger()
            case "connections": connections = try json.readInteger()
            case "maxBytesPerSecond": rate = try json.readOptionalInteger()
            case "timestamping": timestamping = try json.readOptionalBool() ?? false
            case "remoteTime": remoteTime = try json.readOptionalBool() ?? false
            case "pieceHashes": pieces = try json.optional(self.pieceHashes)
            case "cookies": cookies = try json.optional(self.cookies) ?? SourceCookies()
            case "growsConnections": growsConnections = try json.readOptionalBool() ?? false
            case "compositeChecksum": composite = try json.optional(self.compositeChecksum)
            case "signing": signing = try json.optional(self.signing)
            default: try json.skipValue()
            }
        }
        guard let url, let directory, let connections, let priority, let headers else {
            throw JSONParser.Failure(
                offset: start, reason: "a request without its url, directory, connections, priority or headers")
        }
        var request: DownloadRequest
        do {
            // The count as stored, held to today's bounds (a row is never refused for it).
            request = try DownloadRequest(
                url: url, destination: .directory(directory),
                connections: min(max(1, Int(connections)), DownloadRequest.maxConnections),
                mirrors: mirrors)
        } catch {
            throw JSONParser.Failure(offset: start, reason: error.message)
        }
        request.fileName = fileName
        request.range = range
        request.checksum = checksum
        request.headers = headers
        request.maxAttempts = maxAttempts.map(Int.init)
        request.priority = Int(priority)
        request.maxBytesPerSecond = rate.flatMap { $0 > 0 ? $0 : nil }
        request.timestamping = timestamping
        request.remoteTime = remoteTime
        request.pieceHashes = pieces
        request.cookies = cookies
        request.growsConnections = growsConnections
        request.compositeChecksum = composite
        request.signing = signing
        return request
    }

    private static func url(_ json: inout JSONParser) throws(JSONParser.Failure) -> RemoteURL {
        let start = json.offset
        var text: String?
        try json.readObject { json, key throws(JSONParser.Failure) in
            if key == "absoluteString" { text = try json.readString() } else { try json.skipValue() }
        }
        guard let text else { throw JSONParser.Failure(offset: start, reason: "a URL without its absoluteString") }
        do {
            return try RemoteURL(text)
        } catch {
            throw JSONParser.Failure(offset: start, reason: "not a URL")
        }
    }

    /// A `Segment`'s keys, or a `ByteRange`'s (no `written`).
    private static func span(_ json: inout JSONParser) throws(JSONParser.Failure) -> (
        start: Int64, end: Int64?, written: Int64?
    ) {
        let offset = json.offset
        var start: Int64?
        var end: Int64?
        var written: Int64?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "start": start = try json.readInteger()
            case "end": end = try json.readOptionalInteger()
            case "written": written = try json.readInteger()
            default: try json.skipValue()
            }
        }
        guard let start else { throw JSONParser.Failure(offset: offset, reason: "no start") }
        return (start, end, written)
    }

    private static func segments(_ json: inout JSONParser) throws(JSONParser.Failure) -> [Segment] {
        try json.readList { json throws(JSONParser.Failure) in
            let offset = json.offset
            let span = try self.span(&json)
            guard let written = span.written else {
                throw JSONParser.Failure(offset: offset, reason: "a segment without written")
            }
            return Segment(start: span.start, end: span.end, written: written)
        }
    }

    private static func validator(_ json: inout JSONParser) throws(JSONParser.Failure) -> EntityValidator {
        var validator = EntityValidator()
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "etag": validator.etag = try json.readOptionalString()
            case "lastModified": validator.lastModified = try json.readOptionalString()
            default: try json.skipValue()
            }
        }
        return validator
    }

    private static func checksum(_ json: inout JSONParser) throws(JSONParser.Failure) -> Checksum {
        let offset = json.offset
        var algorithm: Checksum.Algorithm?
        var hex: String?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "algorithm": algorithm = try json.readKnown(Checksum.Algorithm.self)
            case "hex": hex = try json.readString()
            default: try json.skipValue()
            }
        }
        guard let algorithm, let hex else {
            throw JSONParser.Failure(offset: offset, reason: "a checksum without algorithm or hex")
        }
        return Checksum(algorithm: algorithm, hex: hex)
    }

    private static func serverDigest(_ json: inout JSONParser) throws(JSONParser.Failure) -> ServerDigest {
        let offset = json.offset
        var checksum: Checksum?
        var field: ServerDigest.Field?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "checksum": checksum = try self.checksum(&json)
            case "field": field = try json.readKnown(ServerDigest.Field.self)
            default: try json.skipValue()
            }
        }
        guard let checksum, let field else {
            throw JSONParser.Failure(offset: offset, reason: "a server digest without checksum or field")
        }
        return ServerDigest(checksum, from: field)
    }

    private static func error(_ json: inout JSONParser) throws(JSONParser.Failure) -> HaulError {
        let offset = json.offset
        var code: String?
        var message: String?
        var httpStatus: Int64?
        var cause: String?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "code": code = try json.readString()
            case "message": message = try json.readString()
            case "httpStatus": httpStatus = try json.readOptionalInteger()
            case "cause": cause = try json.readOptionalString()
            default: try json.skipValue()
            }
        }
        guard let code, let message else {
            throw JSONParser.Failure(offset: offset, reason: "an error without code or message")
        }
        return HaulError(HaulError.Code(reading: code), message, httpStatus: httpStatus.map(Int.init), cause: cause)
    }

    private static func headers(_ json: inout JSONParser) throws(JSONParser.Failure) -> HTTPHeaderList {
        var fields: [HTTPHeaderList.Field] = []
        try json.readObject { json, key throws(JSONParser.Failure) in
            guard key == "fields" else { return try json.skipValue() }
            fields = try json.readList { json throws(JSONParser.Failure) in
                let offset = json.offset
                var name: String?
                var value: String?
                try json.readObject { json, key throws(JSONParser.Failure) in
                    switch key {
                    case "name": name = try json.readString()
                    case "value": value = try json.readString()
                    default: try json.skipValue()
                    }
                }
                guard let name, let value else {
                    throw JSONParser.Failure(offset: offset, reason: "a header without name or value")
                }
                return HTTPHeaderList.Field(name: name, value: value)
            }
        }
        return HTTPHeaderList(fields)
    }

    private static func pieceHashes(_ json: inout JSONParser) throws(JSONParser.Failure) -> PieceHashes {
        let offset = json.offset
        var length: Int64?
        var algorithm: Checksum.Algorithm?
        var hashes: [String]?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "length": length = try json.readInteger()
            case "algorithm": algorithm = try json.readKnown(Checksum.Algorithm.self)
            case "hashes": hashes = try json.readList { json throws(JSONParser.Failure) in try json.readString() }
            default: try json.skipValue()
            }
        }
        guard let length, let algorithm, let hashes else {
            throw JSONParser.Failure(offset: offset, reason: "piece hashes without length, algorithm or hashes")
        }
        do {
            return try PieceHashes(length: length, algorithm: algorithm, hashes: hashes)
        } catch {
            throw JSONParser.Failure(offset: offset, reason: error.message)
        }
    }

    private static func compositeChecksum(_ json: inout JSONParser) throws(JSONParser.Failure) -> CompositeChecksum {
        let offset = json.offset
        var algorithm: Checksum.Algorithm?
        var lengths: [Int64] = []
        var hex: String?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "algorithm": algorithm = try json.readKnown(Checksum.Algorithm.self)
            case "hex": hex = try json.readString()
            case "runs":
                let runs = try json.readList { json throws(JSONParser.Failure) in
                    var length: Int64 = 0
                    var count: Int64 = 0
                    try json.readObject { json, key throws(JSONParser.Failure) in
                        switch key {
                        case "length": length = try json.readInteger()
                        case "count": count = try json.readInteger()
                        default: try json.skipValue()
                        }
                    }
                    return (length, count)
                }
                guard runs.allSatisfy({ $0.1 > 0 && $0.1 <= 10_000 }) else {
                    throw JSONParser.Failure(
                        offset: offset, reason: "a composite checksum's run of parts is out of bounds")
                }
                lengths = runs.flatMap { Array(repeating: $0.0, count: Int($0.1)) }
            default: try json.skipValue()
            }
        }
        guard let algorithm, let hex else {
            throw JSONParser.Failure(offset: offset, reason: "a composite checksum without algorithm or digest")
        }
        do {
            return try CompositeChecksum(algorithm: algorithm, partLengths: lengths, hex: hex)
        } catch {
            throw JSONParser.Failure(offset: offset, reason: error.message)
        }
    }

    private static func signing(_ json: inout JSONParser) throws(JSONParser.Failure) -> SigV4Scope {
        let offset = json.offset
        var region: String?
        var service: String?
        try json.readObject { json, key throws(JSONParser.Failure) in
            switch key {
            case "region": region = try json.readString()
            case "service": service = try json.readString()
            default: try json.skipValue()
            }
        }
        guard let region, let service else {
            throw JSONParser.Failure(offset: offset, reason: "a signing scope without region or service")
        }
        return SigV4Scope(region: region, service: service)
    }

    private static func cookies(_ json: inout JSONParser) throws(JSONParser.Failure) -> SourceCookies {
        var fields: [String: String] = [:]
        try json.readObject { json, key throws(JSONParser.Failure) in
            guard key == "fields" else { return try json.skipValue() }
            try json.readObject { json, url throws(JSONParser.Failure) in fields[url] = try json.readString() }
        }
        return SourceCookies(fields: fields)
    }

    /// Reads `StoredCredentials`' form (`{"user": …, "password": …}`, other keys skipped).
    /// Throws `FormError` when the text is not JSON, not that form, or lacks either field.
    public static func credentials(fromJSON text: String) throws(FormError) -> Credentials {
        let bytes = Array(text.utf8)
        var json = JSONParser(bytes: bytes)
        var user: String?
        var password: String?
        do {
            try json.readObject { json, key throws(JSONParser.Failure) in
                switch key {
                case "user": user = try json.readString()
                case "password": password = try json.readString()
                default: try json.skipValue()
                }
            }
            try json.finish()
        } catch {
            throw FormError(failure: error, in: bytes)
        }
        guard let user, let password else { throw FormError(reason: "no user or password") }
        return Credentials(user: user, password: password)
    }
}

extension JSONParser {
    /// A value `read` reads, or nil for `null`.
    mutating func optional<T>(_ read: (inout JSONParser) throws(Failure) -> T) throws(Failure) -> T? {
        if try readNull() { return nil }
        return try read(&self)
    }

    mutating func readOptionalString() throws(Failure) -> String? {
        try optional { json throws(Failure) in try json.readString() }
    }

    mutating func readOptionalInteger() throws(Failure) -> Int64? {
        try optional { json throws(Failure) in try json.readInteger() }
    }

    mutating func readOptionalBool() throws(Failure) -> Bool? {
        try optional { json throws(Failure) in try json.readBool() }
    }

    /// An array whose items `read` reads.
    mutating func readList<T>(_ read: (inout JSONParser) throws(Failure) -> T) throws(Failure) -> [T] {
        var items: [T] = []
        try readArray { json throws(Failure) in items.append(try read(&json)) }
        return items
    }

    /// A string naming one case of `T`.
    mutating func readKnown<T: RawRepresentable<String>>(_ type: T.Type) throws(Failure) -> T {
        let start = offset
        guard let known = T(rawValue: try readString()) else {
            throw Failure(offset: start, reason: "an unknown \(T.self)")
        }
        return known
    }
}

extension JSONWriter {
    /// A key and value left out when nil, as `encodeIfPresent` does.
    mutating func optional(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    mutating func optional(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        integer(name, value)
    }

    mutating func integer(_ name: StaticString, _ value: Int64) {
        key(name)
        raw(String(value))
    }
}
