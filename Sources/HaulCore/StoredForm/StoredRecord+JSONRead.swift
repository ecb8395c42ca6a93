/// `DownloadRecord`'s `Codable` form, read by hand: the record and its request here, their
/// nested types' forms in `StoredRecord+JSONReadParts.swift`. Keys are taken in any order and a
/// key it does not know is skipped, as `JSONDecoder` does; a key left out is a nil optional, as
/// `encodeIfPresent` leaves it out (`StoredRecord+JSONWrite.swift`).
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
        var sequential = false
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
            case "sequential": sequential = try json.readOptionalBool() ?? false
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
        request.sequential = sequential
        request.compositeChecksum = composite
        request.signing = signing
        return request
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
