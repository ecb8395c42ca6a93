/// `DownloadRecord`'s `Codable` form, written by hand: the keys its `CodingKeys` name (a nil
/// optional left out, as `encodeIfPresent` leaves it), the nested types' own forms (`RemoteURL`'s
/// four keys, `HTTPHeaderList`'s `fields`, ...), keys in declaration order. Read back by
/// `StoredRecord+JSONRead.swift`; `StoredRecordCompletenessTests` holds both to every stored
/// property, so a field added to the record and forgotten here fails a test.
extension StoredRecord {
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
            json.field("sequential", request.sequential)
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
