import Foundation
import HaulCore
import SQLiteNIO

@testable import HaulStore

/// Rows as schema 11 wrote them (33 positional columns, five ad-hoc encodings): the writer of
/// the last haul before the stored form, kept here so the migration is tested against exactly
/// what it wrote.
enum LegacyWriter {
    static let columns = [
        "id", "identity", "url", "directory", "requested_name", "range_start", "range_end", "checksum", "headers",
        "max_attempts", "priority", "status", "file_name", "final_url", "etag", "last_modified", "total_length",
        "segments", "completed_length", "error_code", "error_message", "error_http_status", "error_cause",
        "created_at", "updated_at", "position", "connections", "max_bytes_per_second", "credentials",
        "mirrors", "server_digest", "piece_hashes", "cookies", "grows_connections",
    ]

    /// A database at schema 11 holding `records` as that haul saved them.
    static func database(at path: String, holding records: [DownloadRecord], keepCredentials: Bool = true) async throws
    {
        let store = try await SQLiteDownloadStore.open(path: path, keepsCredentials: keepCredentials, schemaVersion: 11)
        for record in records {
            let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
            _ = try await store.query(
                "INSERT INTO downloads (\(columns.joined(separator: ", "))) VALUES (\(placeholders))",
                binds(record, keepCredentials: keepCredentials))
        }
        try await store.close()
    }

    static func binds(_ record: DownloadRecord, keepCredentials: Bool) throws -> [SQLiteData] {
        let request = record.request
        func text(_ value: String?) -> SQLiteData { value.map { .text($0) } ?? .null }
        func integer(_ value: Int64?) -> SQLiteData { value.map { .integer(SQLiteInt64($0)) } ?? .null }
        func json(_ value: some Encodable) throws -> String {
            String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        }
        let segments = record.segments.map { "\($0.start)-\($0.end.map(String.init) ?? ""):\($0.written)" }.joined(
            separator: ",")
        return [
            .text(record.id.rawValue),
            .text(request.identity),
            .text(request.url.absoluteString),
            .text(request.directory),
            text(request.fileName),
            integer(request.range?.start),
            integer(request.range?.end),
            text(request.checksum?.description),
            .text(request.headers.fields.isEmpty ? #"{"fields":[]}"# : try json(request.headers)),
            integer(request.maxAttempts.map(Int64.init)),
            .integer(SQLiteInt64(request.priority)),
            .text(record.status.rawValue),
            text(record.fileName),
            text(record.finalURL),
            text(record.validator?.etag),
            text(record.validator?.lastModified),
            integer(record.totalLength),
            .text(segments),
            .integer(SQLiteInt64(record.completedLength)),
            text(record.error?.code.rawValue),
            text(record.error?.message),
            integer(record.error?.httpStatus.map(Int64.init)),
            text(record.error?.cause),
            .integer(SQLiteInt64(record.createdAt)),
            .integer(SQLiteInt64(Date().timeIntervalSince1970)),
            .integer(SQLiteInt64(record.position)),
            .integer(SQLiteInt64(request.connections)),
            integer(request.maxBytesPerSecond),
            keepCredentials ? text(try request.credentials.map { try json(StoredCredentials($0)) }) : .null,
            text(request.mirrors.isEmpty ? nil : request.mirrors.map(\.absoluteString).joined(separator: "\n")),
            text(record.serverDigest.map { "\($0.field.rawValue) \($0.checksum)" }),
            text(try request.pieceHashes.map(json)),
            text(request.cookies.isEmpty ? nil : request.cookies.storedForm),
            .integer(request.growsConnections ? 1 : 0),
        ]
    }
}
