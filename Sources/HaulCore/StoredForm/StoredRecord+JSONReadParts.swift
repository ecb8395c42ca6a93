/// The readers of the nested types' forms inside a record's JSON (`RemoteURL`'s, `Segment`'s,
/// `HTTPHeaderList`'s, ...), for `StoredRecord+JSONRead.swift`: each reads one value's object, keys
/// in any order, unknown keys skipped, and fails naming where (the byte offset), never the text.
extension StoredRecord {
    static func url(_ json: inout JSONParser) throws(JSONParser.Failure) -> RemoteURL {
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
    static func span(_ json: inout JSONParser) throws(JSONParser.Failure) -> (
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

    static func segments(_ json: inout JSONParser) throws(JSONParser.Failure) -> [Segment] {
        try json.readList { json throws(JSONParser.Failure) in
            let offset = json.offset
            let span = try self.span(&json)
            guard let written = span.written else {
                throw JSONParser.Failure(offset: offset, reason: "a segment without written")
            }
            return Segment(start: span.start, end: span.end, written: written)
        }
    }

    static func validator(_ json: inout JSONParser) throws(JSONParser.Failure) -> EntityValidator {
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

    static func checksum(_ json: inout JSONParser) throws(JSONParser.Failure) -> Checksum {
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

    static func serverDigest(_ json: inout JSONParser) throws(JSONParser.Failure) -> ServerDigest {
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

    static func error(_ json: inout JSONParser) throws(JSONParser.Failure) -> HaulError {
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

    static func headers(_ json: inout JSONParser) throws(JSONParser.Failure) -> HTTPHeaderList {
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

    static func pieceHashes(_ json: inout JSONParser) throws(JSONParser.Failure) -> PieceHashes {
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

    static func compositeChecksum(_ json: inout JSONParser) throws(JSONParser.Failure) -> CompositeChecksum {
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

    static func signing(_ json: inout JSONParser) throws(JSONParser.Failure) -> SigV4Scope {
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

    static func cookies(_ json: inout JSONParser) throws(JSONParser.Failure) -> SourceCookies {
        var fields: [String: String] = [:]
        try json.readObject { json, key throws(JSONParser.Failure) in
            guard key == "fields" else { return try json.skipValue() }
            try json.readObject { json, url throws(JSONParser.Failure) in fields[url] = try json.readString() }
        }
        return SourceCookies(fields: fields)
    }
}
