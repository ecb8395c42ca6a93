import Foundation
import HaulCore
import HaulStore
import Testing

/// The record's stored form, proven complete (issue 46) before later issues change it. Its field
/// list has several hand-kept copies: the codec's writer (`StoredRecord+JSONWrite.swift`) and
/// reader (`StoredRecord+JSONRead.swift`), `DownloadRequest`'s `CodingKeys` and `init(from:)`, and
/// the `==` the other tests compare with. Hand-built samples (`StoredRecordTests`) hold them in step
/// only for the fields someone remembered, so a new field forgotten by the codec and by the samples
/// would be lost on the first save with every test passing. Here `Mirror` finds every stored
/// property, recursively: the sample must set each one to a value that is not a default (so a new
/// field fails until the sample sets it), and every writer and reader must give each back (so a
/// field one of them forgot fails), compared property by property rather than by `==`.
@Suite(.timeLimit(.minutes(2))) struct StoredRecordCompletenessTests {
    /// The stored properties that are no part of the record's JSON, by path (`[]` for any index
    /// or key), each with why. The sample sets them all the same; the JSON gives them back nil.
    static let notInTheJSON: [String: String] = [
        "request.credentials": "kept in the row's own column (`StoredCredentials`), by a store that keeps them",
        "request.authorization": "a registry's token: never stored, the command that resumes gives it again",
        "request.url.credentials": "`RemoteURL`'s form is its text without userinfo",
        "request.mirrors[].credentials": "`RemoteURL`'s form is its text without userinfo",
        "error.underlying": "the error as thrown, for logs; its text is kept as `cause`",
    ]

    /// What a row keeps beyond its JSON: the request's credentials, in their own column.
    static let notInARow = notInTheJSON.filter { $0.key != "request.credentials" }

    /// A record whose every stored property holds a value that is no default. A field added to
    /// the record or to a type inside it must be set here too (`theSampleSetsEveryStoredProperty`
    /// fails until it is).
    static func filled() throws -> DownloadRecord {
        var request = try DownloadRequest(
            url: RemoteURL("https://user46:pw46@example.com:8443/a%20b/file.bin?sig=x"),
            destination: .file("/srv/down loads/chosen £.bin"), range: ByteRange(start: 100, end: 999),
            checksum: Checksum(parsing: "sha-256=" + String(repeating: "ab", count: 32)),
            headers: ["X-Token": "a:b", "Accept": "ünïcode"], maxAttempts: 7, priority: 3, connections: 16,
            maxBytesPerSecond: 1_000_000, credentials: Credentials(user: "user46", password: "pw46"),
            mirrors: [RemoteURL("https://m:mirror-pw46@mirror-two:81/x?y=1")])
        request.pieceHashes = try PieceHashes(
            length: 1 << 20, algorithm: .sha1,
            hashes: [String(repeating: "0f", count: 20), String(repeating: "a1", count: 20)])
        request.compositeChecksum = try CompositeChecksum(
            algorithm: .sha512, partLengths: [8 << 20, 8 << 20, 1_234], hex: String(repeating: "5e", count: 64))
        request.signing = SigV4Scope(region: "eu-west-1", service: "execute-api")
        request.growsConnections = true
        request.sequential = true
        request.authorization = "Bearer token-46"
        request.timestamping = true
        request.remoteTime = true
        request.cookies = SourceCookies(
            jar: CookieJar([Cookie(name: "sid", value: "v=1", domain: "example.com")]), urls: request.sources, now: 0)

        var record = DownloadRecord(
            id: DownloadID(rawValue: "00000000000000ff"), request: request, createdAt: 1_700_000_123)
        record.status = .paused
        record.fileName = "renamed £.bin"
        record.finalURL = "https://cdn.example.com/signed?x=\"1\""
        record.validator = EntityValidator(etag: #""abc\"def""#, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        record.totalLength = 5_000_000_000
        record.serverDigest = ServerDigest(
            try Checksum(parsing: "sha-512=" + String(repeating: "cd", count: 64)), from: .contentDigest)
        record.segments = [Segment(start: 100, end: 499, written: 400), Segment(start: 500, end: 999, written: 3)]
        record.error = HaulError(
            .httpStatus, "server said 503", httpStatus: 503, cause: "Service Unavailable",
            underlying: HaulError(.network, "reset"))
        record.position = -42
        return record
    }

    /// A record as `DownloadRecord.init` leaves it, for a sample value left at its default.
    static func bare() throws -> DownloadRecord {
        DownloadRecord(
            id: DownloadID(rawValue: "0000000000000001"),
            request: try DownloadRequest(url: RemoteURL("http://h/"), destination: .directory("/")), createdAt: 0)
    }

    @Test func theSampleSetsEveryStoredProperty() throws {
        let sample = StoredProperties(of: try Self.filled(), skipping: Set(Self.notInTheJSON.keys))
        #expect(sample.hidden.isEmpty, "types whose properties this test cannot see: \(sample.hidden)")
        #expect(sample.values.count > 50, "the walk found the record's properties: \(sample.values.keys.sorted())")
        let defaults: Set = ["nil", "<empty>", "false", "0", "0.0", "\"\""]
        let unset = sample.values.merging(sample.skipped) { value, _ in value }.filter { defaults.contains($0.value) }
        #expect(unset.isEmpty, "stored properties the sample leaves at a default; set them: \(unset.keys.sorted())")
        let bare = StoredProperties(of: try Self.bare(), skipping: Set(Self.notInTheJSON.keys))
        let asBare = sample.values.filter { bare.values[$0.key] == $0.value }
        #expect(asBare.isEmpty, "stored properties the sample leaves as a new record has them: \(asBare)")
        #expect(
            sample.skippedShapes == Set(Self.notInTheJSON.keys), "`notInTheJSON` names only properties that exist")
    }

    /// Each pair of writer and reader: the codec's and Foundation's, in every combination (the
    /// fleet's rows written before the codec are `JSONEncoder`'s).
    static func trips(_ record: DownloadRecord) throws -> [(String, DownloadRecord)] {
        let ours = StoredRecord.json(record)
        let foundation = try JSONEncoder().encode(record)
        return [
            (
                "the codec's JSON read by JSONDecoder",
                try JSONDecoder().decode(DownloadRecord.self, from: Data(ours.utf8))
            ),
            (
                "JSONEncoder's JSON read by the codec",
                try StoredRecord.record(fromJSON: String(decoding: foundation, as: UTF8.self))
            ),
            ("the codec's JSON read by the codec", try StoredRecord.record(fromJSON: ours)),
            ("JSONEncoder's JSON read by JSONDecoder", try JSONDecoder().decode(DownloadRecord.self, from: foundation)),
        ]
    }

    @Test func everyStoredPropertyComesBackFromEveryWriterAndReader() throws {
        let record = try Self.filled()
        let written = StoredProperties(of: record, skipping: Set(Self.notInTheJSON.keys))
        for (trip, read) in try Self.trips(record) {
            let found = StoredProperties(of: read, skipping: Set(Self.notInTheJSON.keys))
            let lost = StoredProperties.differences(written.values, found.values)
            #expect(lost.isEmpty, "\(trip) loses or changes: \(lost)")
            #expect(read == record, "\(trip): equal by `==` too")
            let kept = found.skipped.filter { $0.value != "nil" }
            #expect(kept.isEmpty, "\(trip) holds what the JSON never holds: \(kept.keys.sorted())")
        }
        let ours = StoredRecord.json(record)
        #expect(
            try JSONParser.parse(Array(ours.utf8)) == JSONParser.parse(Array(JSONEncoder().encode(record))),
            "the codec writes the JSON value JSONEncoder writes")
        for secret in ["pw46", "token-46"] { #expect(!ours.contains(secret), "never in the JSON: \(secret)") }
    }

    /// A row keeps the credentials too (their column), and the SQLite store all of it across a
    /// reopen.
    @Test func aRowAndTheSQLiteStoreKeepEveryStoredProperty() async throws {
        let record = try Self.filled()
        let written = StoredProperties(of: record, skipping: Set(Self.notInARow.keys))
        let row = StoredRecord(record, keepCredentials: true)
        let fromRow = try StoredRecord.read(
            id: row.id, status: row.status, priority: row.priority, position: row.position, fileName: row.fileName,
            record: row.record, credentials: row.credentials)

        let path = NSTemporaryDirectory() + "haul-complete-\(UUID().uuidString).sqlite"
        // A leftover temporary file fails nothing; the test's own assertions are above it.
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        try await store.save(record)
        try await store.close()
        let reopened = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        let fromStore = try #require(try await reopened.record(record.id))
        try await reopened.close()

        for (trip, read) in [("a row", fromRow), ("the SQLite store", fromStore)] {
            let found = StoredProperties(of: read, skipping: Set(Self.notInARow.keys))
            let lost = StoredProperties.differences(written.values, found.values)
            #expect(lost.isEmpty, "\(trip) loses or changes: \(lost)")
        }
    }

    /// The sizes `StoredProperties.opened` counts on: a stored property added to a type that
    /// hides its properties from `Mirror` changes its size, and this fails until the walk reads
    /// the new one too.
    @Test func theTypesReadPastTheirMirrorsHoldOnlyWhatIsRead() {
        #expect(MemoryLayout<SourceCookies>.size == MemoryLayout<[String: String]>.size, "SourceCookies: fields")
        #expect(MemoryLayout<Credentials>.size == 2 * MemoryLayout<String>.size, "Credentials: user, password")
    }
}

/// Every stored property of a value, found by `Mirror`, by path (`request.mirrors[0].host`), down
/// to values with no properties of their own (strings, numbers, cases without a payload). An
/// optional is its value or `nil`; a collection its elements, or `<empty>`.
struct StoredProperties {
    /// Each property's value as `String(reflecting:)` writes it, by path.
    var values: [String: String] = [:]
    /// The properties not entered (their shape named in `skipping`), by path: `set` or `nil`.
    var skipped: [String: String] = [:]
    /// The shapes of `skipped`'s paths, to tell a name in `skipping` that matches nothing.
    var skippedShapes: Set<String> = []
    /// The paths of values of HaulCore's types that show `Mirror` a view of their own and that
    /// `opened` does not read: their properties cannot be seen.
    var hidden: [String] = []

    /// The properties of `value`, except those whose shape (the path with `[]` for each index or
    /// key) is in `skipping`.
    init(of value: Any, skipping: Set<String>) {
        walk(value, path: "", shape: "", skipping: skipping)
    }

    /// The paths whose values differ, or that only one side has.
    static func differences(_ written: [String: String], _ read: [String: String]) -> [String] {
        Set(written.keys).union(read.keys).sorted().compactMap { path in
            written[path] == read[path]
                ? nil : "\(path): wrote \(written[path] ?? "nothing"), read \(read[path] ?? "nothing")"
        }
    }

    /// The properties of HaulCore's types whose `Mirror` is a redacted view (`CustomReflectable`,
    /// so that printing one never shows a cookie or a password), read here one by one; each type's
    /// size is held to these (`theTypesReadPastTheirMirrorsHoldOnlyWhatIsRead`).
    static func opened(_ value: Any) -> [(String, Any)]? {
        switch value {
        case let cookies as SourceCookies: [("fields", cookies.fields)]
        case let credentials as Credentials: [("user", credentials.user), ("password", credentials.password)]
        default: nil
        }
    }

    private mutating func walk(_ value: Any, path: String, shape: String, skipping: Set<String>) {
        func member(_ label: String) -> (path: String, shape: String) {
            path.isEmpty ? (label, label) : (path + "." + label, shape + "." + label)
        }
        let mirror = Mirror(reflecting: value)
        let children = Array(mirror.children)
        if skipping.contains(shape) {
            skipped[path] = mirror.displayStyle == .optional && children.isEmpty ? "nil" : "set"
            skippedShapes.insert(shape)
            return
        }
        if let opened = Self.opened(value) {
            for (label, child) in opened {
                walk(child, path: member(label).path, shape: member(label).shape, skipping: skipping)
            }
            return
        }
        if value is any CustomReflectable, String(reflecting: type(of: value)).hasPrefix("HaulCore.") {
            hidden.append("\(path): \(type(of: value))")
            return
        }
        switch mirror.displayStyle {
        case .optional:
            if let some = children.first {
                walk(some.value, path: path, shape: shape, skipping: skipping)
            } else {
                values[path] = "nil"
            }
        case .collection:
            if children.isEmpty { values[path] = "<empty>" }
            for (index, child) in children.enumerated() {
                walk(child.value, path: "\(path)[\(index)]", shape: shape + "[]", skipping: skipping)
            }
        case .dictionary:
            if children.isEmpty { values[path] = "<empty>" }
            for child in children {
                let pair = Array(Mirror(reflecting: child.value).children)
                let key = String(reflecting: pair[0].value)
                walk(pair[1].value, path: "\(path)[\(key)]", shape: shape + "[]", skipping: skipping)
            }
        case .set:
            // Its elements in no stable order: compared as one sorted list.
            values[path] =
                children.isEmpty ? "<empty>" : children.map { String(reflecting: $0.value) }.sorted().description
        default:
            if children.isEmpty { values[path] = String(reflecting: value) }
            for (index, child) in children.enumerated() {
                let named = member(child.label ?? "\(index)")
                walk(child.value, path: named.path, shape: named.shape, skipping: skipping)
            }
        }
    }
}
