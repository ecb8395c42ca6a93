import Foundation
import HaulCore
import SQLiteNIO

/// Maps a `DownloadRecord` to a row of `downloads` and back.
struct RecordRow {
    static let columns = [
        "id", "identity", "url", "directory", "requested_name", "range_start", "range_end", "checksum", "headers",
        "max_attempts", "priority", "status", "file_name", "final_url", "etag", "last_modified", "total_length",
        "segments", "completed_length", "error_code", "error_message", "error_http_status", "error_cause",
        "created_at", "updated_at", "position", "connections", "max_bytes_per_second", "credentials",
        "mirrors", "server_digest", "piece_hashes", "cookies", "grows_connections",
    ]

    /// One statement that inserts or updates `rows` records: atomic, and one fsync for all.
    static func upsertSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let values = Array(repeating: row, count: rows).joined(separator: ", ")
        // A store that keeps no credentials writes NULL, which leaves those stored before alone.
        let updates = columns.dropFirst().map {
            $0 == "credentials" ? "credentials = COALESCE(excluded.credentials, credentials)" : "\($0) = excluded.\($0)"
        }.joined(separator: ", ")
        return "INSERT INTO downloads (\(columns.joined(separator: ", "))) VALUES \(values) "
            + "ON CONFLICT(id) DO UPDATE SET \(updates)"
    }

    let binds: [SQLiteData]

    /// - Parameter keepCredentials: whether the request's credentials are written (the daemon's
    ///   private store) or left out (`haul get`: a re-run supplies them again).
    init(_ record: DownloadRecord, keepCredentials: Bool) {
        let request = record.request
        binds = [
            .text(record.id.rawValue),
            .text(request.identity),
            .text(request.url.absoluteString),
            .text(request.directory),
            Self.text(request.fileName),
            Self.integer(request.range?.start),
            Self.integer(request.range?.end),
            Self.text(request.checksum?.description),
            .text(StoredJSON.headers(request.headers)),
            Self.integer(request.maxAttempts.map(Int64.init)),
            .integer(SQLiteInt64(request.priority)),
            .text(record.status.rawValue),
            Self.text(record.fileName),
            Self.text(record.finalURL),
            Self.text(record.validator?.etag),
            Self.text(record.validator?.lastModified),
            Self.integer(record.totalLength),
            .text(SegmentCoding.encode(record.segments)),
            .integer(SQLiteInt64(record.completedLength)),
            Self.text(record.error?.code.rawValue),
            Self.text(record.error?.message),
            Self.integer(record.error?.httpStatus.map(Int64.init)),
            Self.text(record.error?.cause),
            .integer(SQLiteInt64(record.createdAt)),
            .integer(SQLiteInt64(Date().timeIntervalSince1970)),
            .integer(SQLiteInt64(record.position)),
            .integer(SQLiteInt64(request.connections)),
            Self.integer(request.maxBytesPerSecond),
            keepCredentials ? Self.text(request.credentials.map(StoredJSON.credentials)) : .null,
            Self.text(request.mirrors.isEmpty ? nil : request.mirrors.map(\.absoluteString).joined(separator: "\n")),
            Self.text(record.serverDigest.map { "\($0.field.rawValue) \($0.checksum)" }),
            Self.text(request.pieceHashes.map(Self.encodePieceHashes)),
            Self.text(request.cookies.isEmpty ? nil : request.cookies.storedForm),
            .integer(request.growsConnections ? 1 : 0),
        ]
    }

    static func decode(_ row: SQLiteRow) throws -> DownloadRecord {
        func string(_ name: String) -> String? { row.column(name)?.string }
        func int(_ name: String) -> Int64? { row.column(name)?.integer.map(Int64.init) }
        guard let id = string("id"), let url = string("url"), let directory = string("directory"),
              let statusText = string("status"), let status = DownloadStatus(rawValue: statusText),
              let segmentText = string("segments"), let segments = SegmentCoding.decode(segmentText) else {
            // Not the row itself: it holds headers and credentials.
            throw HaulError(.store, "download \(string("id") ?? "without an id") in the store cannot be read: its url, directory, status or segments are missing or malformed")
        }
        let range = int("range_start").map { ByteRange(start: $0, end: int("range_end")) }
        let checksum = try string("checksum").map { try Checksum(parsing: $0) }
        let destination: DownloadRequest.Destination =
            string("requested_name").map { .file(Paths.join(directory, $0)) } ?? .directory(directory)
        let request = try DownloadRequest(
            url: RemoteURL(url), destination: destination, range: range, checksum: checksum,
            maxAttempts: int("max_attempts").map(Int.init),
            priority: Int(int("priority") ?? 0),
            connections: min(max(1, Int(int("connections") ?? 1)), DownloadRequest.maxConnections),
            maxBytesPerSecond: int("max_bytes_per_second").flatMap { $0 > 0 ? $0 : nil },
            mirrors: (string("mirrors") ?? "").split(separator: "\n").map { try RemoteURL(String($0)) })
        var record = DownloadRecord(id: DownloadID(rawValue: id), request: request, createdAt: int("created_at") ?? 0)
        record.status = status
        record.position = int("position") ?? 0
        record.fileName = string("file_name")
        record.finalURL = string("final_url")
        if string("etag") != nil || string("last_modified") != nil {
            record.validator = EntityValidator(etag: string("etag"), lastModified: string("last_modified"))
        }
        record.totalLength = int("total_length")
        record.serverDigest = try string("server_digest").map(decodeServerDigest)
        record.request.pieceHashes = try string("piece_hashes").map(decodePieceHashes)
        record.request.growsConnections = (int("grows_connections") ?? 0) != 0
        record.segments = segments
        if let code = string("error_code") {
            record.error = HaulError(HaulError.Code(reading: code), string("error_message") ?? code,
                                     httpStatus: int("error_http_status").map(Int.init), cause: string("error_cause"))
        }
        readSecrets(of: &record, headers: string("headers"), credentials: string("credentials"), cookies: string("cookies"))
        return record
    }

    /// What a resume is sent with; a part that cannot be read fails the record (`markUnreadable`).
    static func readSecrets(of record: inout DownloadRecord, headers: String?, credentials: String?, cookies: String?) {
        do {
            record.request.headers = try StoredJSON.headers(headers ?? "")
        } catch {
            record.markUnreadable("headers", detail: error.cause ?? error.message)
        }
        do {
            record.request.credentials = try credentials.map(StoredJSON.credentials)
        } catch {
            record.markUnreadable("credentials", detail: error.cause ?? error.message)
        }
        do {
            if let cookies { record.request.cookies = try SourceCookies(storedForm: cookies) }
        } catch {
            record.markUnreadable("cookies", detail: error.message)
        }
    }

    /// `Repr-Digest sha-256=HEX`, as written above.
    static func decodeServerDigest(_ text: String) throws -> ServerDigest {
        let halves = text.split(separator: " ", maxSplits: 1)
        guard halves.count == 2, let field = ServerDigest.Field(rawValue: String(halves[0])) else {
            throw HaulError(.store, "unreadable server digest '\(text)'")
        }
        return ServerDigest(try Checksum(parsing: String(halves[1])), from: field)
    }

    /// A Metalink's piece digests, as JSON.
    static func encodePieceHashes(_ pieces: PieceHashes) -> String {
        do {
            return String(decoding: try JSONEncoder().encode(pieces), as: UTF8.self)
        } catch {
            // Two integers, an enum and strings always encode.
            preconditionFailure("cannot encode piece hashes: \(error)")
        }
    }

    static func decodePieceHashes(_ text: String) throws -> PieceHashes {
        do {
            return try JSONDecoder().decode(PieceHashes.self, from: Data(text.utf8))
        } catch {
            throw HaulError(.store, "unreadable piece hashes", underlying: error)
        }
    }

    static func text(_ value: String?) -> SQLiteData { value.map { .text($0) } ?? .null }
    static func integer(_ value: Int64?) -> SQLiteData { value.map { .integer(SQLiteInt64($0)) } ?? .null }
}

/// Segments as compact text, `start-end:written` joined by commas (`end` empty when unknown).
enum SegmentCoding {
    static func encode(_ segments: [Segment]) -> String {
        segments.map { "\($0.start)-\($0.end.map(String.init) ?? ""):\($0.written)" }.joined(separator: ",")
    }

    static func decode(_ text: String) -> [Segment]? {
        var segments: [Segment] = []
        for part in text.split(separator: ",") {
            let halves = part.split(separator: ":")
            guard halves.count == 2, let written = Int64(halves[1]) else { return nil }
            let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let start = Int64(bounds[0]) else { return nil }
            let end = bounds[1].isEmpty ? nil : Int64(bounds[1])
            segments.append(Segment(start: start, end: end, written: written))
        }
        return segments.isEmpty ? nil : segments
    }
}
