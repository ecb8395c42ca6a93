import HaulCore
import SQLiteNIO

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A row of `downloads` as schema 11 and before kept it: 33 positional columns with five ad-hoc
/// encodings. Read only by the migration to the stored form (`StoreSchema.recordForm`), which
/// rewrites every row as `StoredRecord`.
enum LegacyRecordRow {
    static func decode(_ row: SQLiteRow) throws -> DownloadRecord {
        func string(_ name: String) -> String? { row.column(name)?.string }
        func int(_ name: String) -> Int64? { row.column(name)?.integer.map(Int64.init) }
        guard let id = string("id"), let url = string("url"), let directory = string("directory"),
            let statusText = string("status"), let status = DownloadStatus(rawValue: statusText),
            let segmentText = string("segments"), let segments = SegmentCoding.decode(segmentText)
        else {
            // Not the row itself: it holds headers and credentials.
            throw HaulError(
                .store,
                """
                download \(string("id") ?? "without an id") in the store cannot be read: its url, directory, \
                status or segments are missing or malformed
                """
            )
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
            record.error = HaulError(
                HaulError.Code(reading: code), string("error_message") ?? code,
                httpStatus: int("error_http_status").map(Int.init), cause: string("error_cause"))
        }
        readSecrets(
            of: &record, headers: string("headers"), credentials: string("credentials"), cookies: string("cookies"))
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

    static func decodePieceHashes(_ text: String) throws -> PieceHashes {
        do {
            return try JSONDecoder().decode(PieceHashes.self, from: Data(text.utf8))
        } catch {
            throw HaulError(.store, "unreadable piece hashes", underlying: error)
        }
    }

}

/// Segments as compact text, `start-end:written` joined by commas (`end` empty when unknown).
enum SegmentCoding {
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
