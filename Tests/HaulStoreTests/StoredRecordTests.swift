import Foundation
import HaulCore
import SQLiteNIO
import Testing

@testable import HaulStore

/// The one stored form of a record (HaulCore's `StoredRecord`), shared by SQLite and the fleet:
/// the same form as the record's `Codable` one, field for field, and a schema-11 database
/// migrated into it without losing any field.
@Suite(.timeLimit(.minutes(2))) struct StoredRecordTests {
    /// Records that between them set every field of the record and its request.
    static func samples(timestamps: Bool = true) throws -> [DownloadRecord] {
        var plain = DownloadRecord(
            id: DownloadID(rawValue: "0000000000000001"),
            request: try DownloadRequest(url: RemoteURL("http://h/plain"), destination: .directory("/tmp")),
            createdAt: 1_700_000_000)
        plain.position = 17

        var request = try DownloadRequest(
            url: RemoteURL("https://user:pw@example.com:8443/a%20b/file.bin?sig=x/y&z=1"),
            destination: .file("/srv/down loads/chosen £.bin"), range: ByteRange(start: 100, end: 999),
            checksum: Checksum(parsing: "sha-256=" + String(repeating: "ab", count: 32)),
            headers: [
                "Cookie": #"sid=1; q="x\y""#, "X-Token": "a:b", "x-token": "second, same name", "Accept": "ünïcode",
            ],
            maxAttempts: 7, priority: 3, connections: 16, maxBytesPerSecond: 1_000_000,
            credentials: Credentials(user: #"ul:la%"#, password: #"p"w:%3A£\"#),
            mirrors: [RemoteURL("http://mirror-one/file.bin"), RemoteURL("https://mirror-two:81/x?y=1")])
        request.growsConnections = true
        request.timestamping = timestamps
        request.remoteTime = timestamps
        request.pieceHashes = try PieceHashes(
            length: 1 << 20, algorithm: .sha1,
            hashes: [String(repeating: "0f", count: 20), String(repeating: "a1", count: 20)])
        request.compositeChecksum = try CompositeChecksum(
            algorithm: .sha256, partLengths: [8 << 20, 8 << 20, 8 << 20, 1_234],
            hex: String(repeating: "5e", count: 32))
        request.signing = SigV4Scope(region: "eu-west-1")
        request.cookies = SourceCookies(
            jar: try CookieJar(
                netscapeFile: "example.com\tFALSE\t/\tFALSE\t0\tsid\tabc\nmirror-one\tFALSE\t/\tFALSE\t0\tk\tv\n",
                file: "jar", now: 0),
            urls: request.sources, now: 0)
        var full = DownloadRecord(
            id: DownloadID(rawValue: "00000000000000ff"), request: request, createdAt: 1_700_000_123)
        full.status = .paused
        full.fileName = "chosen £.bin"
        full.finalURL = "https://cdn.example.com/signed?x=\"1\""
        full.validator = EntityValidator(etag: #""abc\"def""#, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        full.totalLength = 5_000_000_000
        full.serverDigest = ServerDigest(
            try Checksum(parsing: "sha-512=" + String(repeating: "cd", count: 64)), from: .reprDigest)
        full.segments = [Segment(start: 100, end: 499, written: 400), Segment(start: 500, end: 999, written: 3)]
        full.error = HaulError(.httpStatus, "server said 503", httpStatus: 503, cause: "Service Unavailable\tretry")
        full.position = -42

        var expired = DownloadRecord(
            id: DownloadID(rawValue: "00000000000000aa"),
            request: try DownloadRequest(url: RemoteURL("http://h/expired"), destination: .directory("/")),
            createdAt: 5)
        expired.status = .failed
        expired.error = HaulError(.urlExpired, "the URL expired")
        expired.validator = EntityValidator(etag: "W/\"weak\"")
        expired.segments = [Segment(start: 0, end: nil, written: 123_456)]
        return [plain, full, expired]
    }

    @Test func theFormIsTheCodableOneFieldForField() throws {
        for record in try Self.samples() {
            let ours = StoredRecord.json(record)
            let foundation = try JSONEncoder().encode(record)
            #expect(
                try JSONParser.parse(Array(ours.utf8)) == JSONParser.parse(Array(foundation)),
                "the same JSON, in \(record.id)")
            #expect(
                try JSONDecoder().decode(DownloadRecord.self, from: Data(ours.utf8)) == record, "JSONDecoder reads it")
            let read = try StoredRecord.record(fromJSON: String(decoding: foundation, as: UTF8.self))
            #expect(read == record, "it reads what JSONEncoder wrote (the fleet's rows)")
            #expect(read.request.credentials == nil, "never part of the form")
        }
        let credentials = Credentials(user: #"ul:la%"#, password: #"p"w:%3A£\"#)
        let ours = StoredRecord.json(credentials)
        #expect(
            try JSONParser.parse(Array(ours.utf8))
                == JSONParser.parse(Array(JSONEncoder().encode(StoredCredentials(credentials)))))
        #expect(try StoredRecord.credentials(fromJSON: ours) == credentials)
    }

    @Test func aRowsColumnsWinOverItsJSONAndBadPartsAreNamedNotPrinted() throws {
        let record = try Self.samples()[1]
        let row = StoredRecord(record, keepCredentials: true)
        let moved = try StoredRecord.read(
            id: row.id, status: "queued", priority: 9, position: 1, fileName: "reserved.bin",
            record: row.record, credentials: row.credentials)
        #expect(
            moved.status == .queued && moved.request.priority == 9 && moved.position == 1
                && moved.fileName == "reserved.bin")
        #expect(moved.request.credentials == record.request.credentials)
        var dumped = ""
        dump(row, to: &dumped)
        for shown in ["\(row)", String(reflecting: row), dumped] {
            #expect(!shown.contains("%3A£") && !shown.contains("sid=1") && shown.contains(row.id), "printed: \(shown)")
        }

        // A key it does not know (a newer haul's) is skipped, as JSONDecoder skips it.
        let newer = "{\"future\":{\"a\":[1,2.5,null,true]}," + row.record.dropFirst()
        #expect(try StoredRecord.record(fromJSON: newer) == record)

        let badCredentials = try StoredRecord.read(
            id: row.id, status: "queued", priority: 0, position: 0, fileName: nil,
            record: row.record, credentials: #"{"user":"u"}"#)
        #expect(badCredentials.status == .failed && badCredentials.request.credentials == nil)
        #expect(badCredentials.error?.cause?.contains("password") == true)

        let broken = row.record.replacingOccurrences(of: "\"segments\":[", with: "\"segments\":[\"hunter2\",")
        let error = #expect(throws: HaulError.self) {
            try StoredRecord.read(
                id: row.id, status: "paused", priority: 0, position: 0, fileName: nil, record: broken, credentials: nil)
        }
        #expect(error?.message == "download 00000000000000ff in the store cannot be read")
        #expect(error?.cause?.hasPrefix("not the stored form: expected an object at byte") == true)
        #expect(!"\(error!)".contains("hunter2") && !"\(error!)".contains("sid=1"))
        let notJSON = #expect(throws: HaulError.self) {
            try StoredRecord.read(
                id: "x", status: "queued", priority: 0, position: 0, fileName: nil, record: "Cookie: sid=1",
                credentials: nil)
        }
        #expect(notJSON?.cause == "not JSON")
    }

    /// Every field of every sample, written by schema 11's writer, comes back equal from the
    /// migrated store; the table has the stored form's columns and no others.
    @Test func aSchemaElevenDatabaseIsMigratedWithoutLoss() async throws {
        let path = NSTemporaryDirectory() + "haul-v11-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Schema 11 kept neither -N nor --remote-time.
        let samples = try Self.samples(timestamps: false)
        try await LegacyWriter.database(at: path, holding: samples)

        let store = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        let read = Dictionary(uniqueKeysWithValues: try await store.records(status: nil).map { ($0.id, $0) })
        for var record in samples {
            let migrated = try #require(read[record.id])
            // Nor a checksum of parts or a signing scope (S3's, after it).
            record.request.compositeChecksum = nil
            record.request.signing = nil
            #expect(migrated == record, "every field of \(record.id)")
            #expect(migrated.request.credentials == record.request.credentials)
        }
        let columns = try await store.query("SELECT name FROM pragma_table_info('downloads')").compactMap {
            $0.column("name")?.string
        }
        #expect(columns == RecordRow.columns)
        #expect(
            try await store.query("PRAGMA user_version").first?.column("user_version")?.integer
                == StoreSchema.steps.count)
        // The migrated rows are the store's own: found by identity, kept in their places.
        #expect(try await store.record(matching: samples[2].request)?.id == samples[2].id)
        #expect(try await store.places(status: .paused).map(\.position) == [-42])
        try await store.close()
    }

    /// A row changed behind the store's back (another process's write) is read as it is now,
    /// never from what the store parsed before.
    @Test func aRowChangedByAnotherWriterIsReadAsItIsNow() async throws {
        let path = NSTemporaryDirectory() + "haul-cache-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteDownloadStore.open(path: path)
        let record = try Self.samples()[1]
        try await store.save(record)
        #expect(try await store.record(record.id)?.finalURL == record.finalURL)
        let other = try await SQLiteDownloadStore.open(path: path)
        var changed = record
        changed.finalURL = "https://elsewhere.example/now"
        try await other.save(changed)
        try await other.close()
        #expect(try await store.record(record.id)?.finalURL == "https://elsewhere.example/now")
        #expect(try await store.records(status: nil).first?.finalURL == "https://elsewhere.example/now")
        try await store.close()
    }

    /// A database a newer haul migrated is refused with its own code, and left as it was.
    @Test func aNewerSchemaIsRefusedAndLeftAlone() async throws {
        let path = NSTemporaryDirectory() + "haul-newer-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteDownloadStore.open(path: path)
        let record = try Self.samples()[0]
        try await store.save(record)
        let newer = StoreSchema.steps.count + 1
        _ = try await store.query("PRAGMA user_version = \(newer)")
        try await store.close()
        let error = await #expect(throws: HaulError.self) { try await SQLiteDownloadStore.open(path: path) }
        #expect(error?.code == .storeTooNew)
        #expect(error?.message.contains("schema version \(newer), newer than this haul's") == true)
        let raw = try await SQLiteConnection.open(storage: .file(path: path))
        #expect(try await raw.query("PRAGMA user_version").first?.column("user_version")?.integer == newer)
        #expect(try await raw.query("SELECT id FROM downloads").count == 1, "nothing was changed")
        try await raw.close()
    }
}
