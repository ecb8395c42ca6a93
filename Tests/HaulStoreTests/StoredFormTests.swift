import Foundation
import HaulCore
import HaulStore
import Testing

/// Headers and credentials in the one form both stores use: rows written in the old forms (by
/// schema 9's and 11's writers) are converted by the migrations and read back equal; a value
/// that cannot be read fails its download with the reason instead of coming back empty, and
/// the migration to the stored form keeps that.
@Suite(.timeLimit(.minutes(2))) struct StoredFormTests {
    let headers: HTTPHeaderList = ["Cookie": #"sid=1; q="x""#, "X-Token": "a:b", "x-token": "second, same name"]
    let credentials = Credentials(user: "ul:la%", password: #"p"w:%3A£"#)

    func record(_ id: String, headers: HTTPHeaderList = [:]) throws -> DownloadRecord {
        var record = DownloadRecord(
            id: DownloadID(rawValue: id),
            request: try DownloadRequest(
                url: RemoteURL("http://h/\(id)"), destination: .directory("/tmp"), headers: headers), createdAt: 100)
        record.request.credentials = credentials
        return record
    }

    /// Runs `script` (Python, the database's path as `path`) against the closed database.
    func python(_ script: String, path: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3, json, sys\npath = sys.argv[1]\n" + script, path]
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(process.terminationStatus == 0)
    }

    @Test func rowsInTheOldFormAreMigratedAndReadBackEqual() async throws {
        let path = NSTemporaryDirectory() + "haul-stored-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try record("old", headers: headers)
        try await LegacyWriter.database(at: path, holding: [original, try record("plain"), try record("odd")])
        // As version 9 wrote them (without the later columns): headers as [[name, value]],
        // credentials as [user, password];
        // one row holds headers the old reader emptied in silence (a pair of one).
        try await python(
            """
            c = sqlite3.connect(path)
            old_headers = json.dumps([["Cookie", 'sid=1; q="x"'], ["X-Token", "a:b"], ["x-token", "second, same name"]])
            old_credentials = json.dumps(["ul:la%", 'p"w:%3A\\u00a3'])
            c.execute("UPDATE downloads SET headers = ?, credentials = ? WHERE id = 'old'", (old_headers, old_credentials))
            c.execute("UPDATE downloads SET headers = '[]', credentials = ? WHERE id = 'plain'", (old_credentials,))
            c.execute("UPDATE downloads SET headers = '[[\\"only-one\\"]]', credentials = ? WHERE id = 'odd'", (old_credentials,))
            c.execute("ALTER TABLE downloads DROP COLUMN grows_connections")
            c.execute("PRAGMA user_version = 9")
            c.commit()
            """, path: path)

        let reopened = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        let migrated = try #require(try await reopened.record(original.id))
        #expect(migrated.request == original.request)
        #expect(migrated.request.headers.fields.map(\.name) == ["Cookie", "X-Token", "x-token"], "order kept")
        #expect(migrated.request.credentials == credentials)
        #expect(migrated.status == .queued && migrated.error == nil)
        let plain = try #require(try await reopened.record(DownloadID(rawValue: "plain")))
        #expect(plain.request.headers == [:] && plain.request.credentials == credentials && plain.status == .queued)
        // Not emptied: left as it was by the migration, and reported.
        let odd = try #require(try await reopened.record(DownloadID(rawValue: "odd")))
        #expect(odd.status == .failed)
        #expect(odd.error?.code == .store)
        #expect(odd.error?.message.contains("download odd: its stored headers cannot be read") == true)
        try await reopened.close()
    }

    @Test func anUnreadableColumnFailsItsDownloadAndSparesTheOthers() async throws {
        let path = NSTemporaryDirectory() + "haul-stored-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var done = try record("done", headers: headers)
        done.status = .completed
        try await LegacyWriter.database(
            at: path,
            holding: [
                try record("good", headers: headers), try record("badheaders", headers: headers),
                try record("badcredentials"), done,
            ])
        try await python(
            """
            c = sqlite3.connect(path)
            c.execute("UPDATE downloads SET headers = 'Cookie: sid=hunter2' WHERE id IN ('badheaders', 'done')")
            c.execute("UPDATE downloads SET credentials = '{\\"user\\": \\"u\\"}' WHERE id = 'badcredentials'")
            c.commit()
            """, path: path)

        let reopened = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        let all = Dictionary(uniqueKeysWithValues: try await reopened.records(status: nil).map { ($0.id.rawValue, $0) })
        #expect(all.count == 4, "one bad row does not fail the listing")
        #expect(all["good"]?.status == .queued && all["good"]?.request.headers == headers)
        let badHeaders = try #require(all["badheaders"])
        #expect(badHeaders.status == .failed)
        #expect(badHeaders.error?.message.contains("download badheaders: its stored headers cannot be read") == true)
        #expect(badHeaders.error?.cause == "not JSON")
        #expect(!"\(badHeaders.error!)".contains("hunter2"), "the reason never quotes the stored text")
        let badCredentials = try #require(all["badcredentials"])
        #expect(badCredentials.status == .failed && badCredentials.request.credentials == nil)
        #expect(
            badCredentials.error?.message.contains("download badcredentials: its stored credentials cannot be read")
                == true)
        #expect(badCredentials.error?.cause?.contains("password") == true)
        // A finished download never runs again: it keeps its status.
        #expect(all["done"]?.status == .completed && all["done"]?.error == nil)
        try await reopened.close()
    }

    /// A row the store cannot read at all is named by its id, never printed: it holds secrets.
    @Test func anUnreadableRowIsNamedNotPrinted() async throws {
        let path = NSTemporaryDirectory() + "haul-stored-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        try await store.save(try record("broken", headers: ["Cookie": "sid=hunter2"]))
        try await store.close()
        try await python(
            """
            c = sqlite3.connect(path)
            c.execute("UPDATE downloads SET status = 'bogus' WHERE id = 'broken'")
            c.commit()
            """, path: path)
        let reopened = try await SQLiteDownloadStore.open(path: path, keepsCredentials: true)
        let error = await #expect(throws: HaulError.self) { try await reopened.record(DownloadID(rawValue: "broken")) }
        #expect(error?.code == .store)
        #expect(error?.message.contains("download broken in the store cannot be read") == true)
        #expect(!"\(error!)".contains("hunter2") && !"\(error!)".contains(#"p"w"#))
        try await reopened.close()
    }
}
