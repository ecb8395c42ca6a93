/// One download as both stores keep it (SQLite's `downloads`, the fleet's `haul_downloads`): the
/// record's `Codable` form as JSON (`record`), plus the columns the queue is ordered, filtered
/// and indexed by, plus the credentials in their own column (`StoredCredentials`' JSON, written
/// only by a store that keeps them).
///
/// The columns that another statement may change without rewriting the JSON (`status`,
/// `priority`, `position` by a move, `file_name` by a name reservation) win over the JSON when
/// a row is read.
///
/// The JSON is written and read by hand (`StoredRecord+JSONWrite.swift`,
/// `StoredRecord+JSONRead.swift`), not through Foundation's `JSONEncoder`: that cost about 30 µs to
/// encode and 35 µs to decode one record (release build), against a few for this codec, and a
/// listing of ten thousand reads every one. It is the same form: `JSONDecoder` reads what this
/// writes, and this reads what `JSONEncoder` wrote (the fleet's rows before this codec), which
/// `StoredRecordTests` holds for hand-built samples and `StoredRecordCompletenessTests` for every
/// stored property, found by `Mirror`, so a field added to the record and forgotten by the codec
/// fails a test.
///
/// Printed (`description`, `dump`), it shows its id and status only: the JSON holds headers and
/// cookies, the credentials column a password.
public struct StoredRecord: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// The download's id (`DownloadID`'s raw value): the row's key.
    public var id: String
    /// The request's `identity`: how a store finds an earlier record of the same download.
    public var identity: String
    /// `DownloadStatus`'s raw value; wins over the JSON's when the row is read.
    public var status: String
    /// The request's priority, higher first; wins over the JSON's when the row is read.
    public var priority: Int
    /// The place among downloads of one priority, lower first (the time added in microseconds,
    /// until a move changes it); wins over the JSON's when the row is read.
    public var position: Int64
    /// When the record was created, in seconds since 1970.
    public var createdAt: Int64
    /// The request's directory, absolute: where the file and its `.part` are written.
    public var directory: String
    /// The final file's name inside `directory`; nil until the first response (or `-o`) fixes
    /// it. A name reservation may set it alone, so when not nil it wins over the JSON's.
    public var fileName: String?
    /// The record's `Codable` form, without credentials (no part of it).
    public var record: String
    /// `StoredCredentials` as JSON; nil when none, or when the store keeps none (a save with
    /// nil leaves those stored before alone).
    public var credentials: String?

    /// The columns a store writes, in this order, named alike in both stores.
    public static let columns = [
        "id", "identity", "status", "priority", "position", "created_at", "directory", "file_name", "record",
        "credentials",
    ]

    /// The id and status only: the rest may hold headers, cookies and a password.
    public var description: String { "StoredRecord(\(id), \(status))" }
    /// The id and status only, for `dump` and debuggers, for the same reason.
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "status": status]) }

    /// The row that stores `record`.
    ///
    /// - Parameters:
    ///   - record: the record to store.
    ///   - keepCredentials: whether the request's credentials are written (the daemon's private
    ///     store, the fleet's) or left out (`haul get`: a re-run supplies them again).
    public init(_ record: DownloadRecord, keepCredentials: Bool) {
        id = record.id.rawValue
        identity = record.request.identity
        status = record.status.rawValue
        priority = record.request.priority
        position = record.position
        createdAt = record.createdAt
        directory = record.request.directory
        fileName = record.fileName
        self.record = Self.json(record)
        credentials = keepCredentials ? record.request.credentials.map(Self.json) : nil
    }

    /// The record a row holds, its columns applied over the JSON. Only the columns that may
    /// differ from the JSON are read back (the others are the JSON's own values, kept for the
    /// indexes).
    ///
    /// - Parameters:
    ///   - id: the `id` column, named in errors.
    ///   - status: the `status` column.
    ///   - priority: the `priority` column.
    ///   - position: the `position` column.
    ///   - fileName: the column, which a name reservation may have set; nil leaves the JSON's.
    ///   - json: the `record` column: the record's JSON.
    ///   - credentials: the `credentials` column, nil when the store keeps none.
    /// - Throws: `.store` when the JSON is not a record's form or the status is unknown; the
    ///   reason names where, never the text (it holds headers and cookies).
    public static func read(
        id: String, status: String, priority: Int, position: Int64, fileName: String?,
        record json: String, credentials: String?
    ) throws(HaulError) -> DownloadRecord {
        try read(
            status: status, priority: priority, position: position, fileName: fileName,
            parsed: parse(id: id, record: json), credentials: credentials)
    }

    /// The record's JSON alone, as `read` parses it (what `StoredRecordCache` keeps).
    public static func parse(id: String, record json: String) throws(HaulError) -> DownloadRecord {
        do {
            return try Self.record(fromJSON: json)
        } catch {
            throw HaulError(.store, "download \(id) in the store cannot be read", cause: error.reason)
        }
    }

    /// `parsed` (the row's JSON, parsed) with the row's columns applied.
    public static func read(
        status: String, priority: Int, position: Int64, fileName: String?,
        parsed: DownloadRecord, credentials: String?
    ) throws(HaulError) -> DownloadRecord {
        var record = parsed
        guard let status = DownloadStatus(rawValue: status) else {
            throw HaulError(.store, "download \(record.id) in the store cannot be read", cause: "an unknown status")
        }
        record.status = status
        record.request.priority = priority
        record.position = position
        if let fileName { record.fileName = fileName }
        // Credentials that cannot be read fail the record (`markUnreadable`), never the listing.
        if let credentials {
            do {
                record.request.credentials = try Self.credentials(fromJSON: credentials)
            } catch {
                record.markUnreadable("credentials", detail: error.reason)
            }
        }
        return record
    }
}
