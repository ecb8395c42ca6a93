import Foundation
import HaulCore
import HaulStore
import Testing

/// Databases written by earlier versions open, and keep their queue order.
@Suite(.timeLimit(.minutes(2))) struct MigrationTests {
    @Test func versionOneDatabaseGainsPositionsInInsertionOrder() async throws {
        let path = NSTemporaryDirectory() + "haul-v1-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The schema of version 1, as the first release wrote it, with two rows added in the same second.
        let script = """
            CREATE TABLE downloads (id TEXT PRIMARY KEY NOT NULL, identity TEXT NOT NULL, url TEXT NOT NULL,
              directory TEXT NOT NULL, requested_name TEXT, range_start INTEGER, range_end INTEGER, checksum TEXT,
              headers TEXT NOT NULL, max_attempts INTEGER, priority INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
              file_name TEXT, final_url TEXT, etag TEXT, last_modified TEXT, total_length INTEGER, segments TEXT NOT NULL,
              completed_length INTEGER NOT NULL, error_code TEXT, error_message TEXT, error_http_status INTEGER,
              error_cause TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
            CREATE INDEX downloads_identity ON downloads (identity);
            CREATE INDEX downloads_queue ON downloads (status, priority DESC, created_at);
            CREATE INDEX downloads_file_name ON downloads (directory, file_name);
            INSERT INTO downloads VALUES ('b', 'x', 'http://h/b', '/tmp', NULL, NULL, NULL, NULL, '[]', NULL, 0, 'queued',
              NULL, NULL, NULL, NULL, NULL, '0-:0', 0, NULL, NULL, NULL, NULL, 100, 100);
            INSERT INTO downloads VALUES ('a', 'y', 'http://h/a', '/tmp', NULL, NULL, NULL, NULL, '[]', NULL, 0, 'paused',
              NULL, NULL, NULL, NULL, NULL, '0-:1000', 1000, NULL, NULL, NULL, NULL, 100, 100);
            PRAGMA user_version = 1;
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = [
            "python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", path,
            script,
        ]
        try python.run()
        while python.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(python.terminationStatus == 0)

        let store = try await SQLiteDownloadStore.open(path: path)
        let records = try await store.records(status: nil)
        #expect(records.map(\.id.rawValue) == ["b", "a"], "insertion order kept")
        #expect(records[0].position < records[1].position)
        #expect(records[1].completedLength == 1000 && records[1].status == .paused)
        try await store.close()
    }

    /// Before the unique index on live names, two live downloads could share a name: the later
    /// of each pair is paused (nothing renamed or deleted); a finished one keeps its name.
    @Test func theNameIndexPausesTheLaterOfTwoLiveDownloadsWithOneName() async throws {
        let path = NSTemporaryDirectory() + "haul-v8-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let columns =
            """
            (id, identity, url, directory, headers, status, file_name, segments, completed_length, created_at, \
            updated_at)
            """
        let script = """
            CREATE TABLE downloads (id TEXT PRIMARY KEY NOT NULL, identity TEXT NOT NULL, url TEXT NOT NULL,
              directory TEXT NOT NULL, requested_name TEXT, range_start INTEGER, range_end INTEGER, checksum TEXT,
              headers TEXT NOT NULL, max_attempts INTEGER, priority INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
              file_name TEXT, final_url TEXT, etag TEXT, last_modified TEXT, total_length INTEGER, segments TEXT NOT NULL,
              completed_length INTEGER NOT NULL, error_code TEXT, error_message TEXT, error_http_status INTEGER,
              error_cause TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
            CREATE INDEX downloads_identity ON downloads (identity);
            CREATE INDEX downloads_queue ON downloads (status, priority DESC, created_at);
            CREATE INDEX downloads_file_name ON downloads (directory, file_name);
            INSERT INTO downloads \(columns) VALUES ('late', 'x', 'http://h/x', '/tmp', '[]', 'running', 'f.bin', '0-:0', 0, 200, 200);
            INSERT INTO downloads \(columns) VALUES ('early', 'y', 'http://h/y', '/tmp', '[]', 'queued', 'f.bin', '0-:0', 0, 100, 100);
            INSERT INTO downloads \(columns) VALUES ('done', 'z', 'http://h/z', '/tmp', '[]', 'completed', 'f.bin', '0-:0', 0, 50, 50);
            PRAGMA user_version = 1;
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = [
            "python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", path,
            script,
        ]
        try python.run()
        while python.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(python.terminationStatus == 0)

        let store = try await SQLiteDownloadStore.open(path: path)
        let status = Dictionary(
            uniqueKeysWithValues: try await store.records(status: nil).map { ($0.id.rawValue, $0.status) })
        #expect(status == ["early": .queued, "late": .paused, "done": .completed])
        // From now on the store gives a name to one live download only.
        #expect(try await !store.reserveFileName("f.bin", directory: "/tmp", for: DownloadID(rawValue: "late")))
        #expect(try await store.reserveFileName("g.bin", directory: "/tmp", for: DownloadID(rawValue: "late")))
        #expect(try await store.record(DownloadID(rawValue: "late"))?.fileName == "g.bin")
        // A download not stored yet only checks: free is true, another's is false.
        #expect(try await store.reserveFileName("h.bin", directory: "/tmp", for: DownloadID(rawValue: "unsaved")))
        #expect(try await !store.reserveFileName("g.bin", directory: "/tmp", for: DownloadID(rawValue: "unsaved")))
        try await store.close()
    }

    @Test func batchSaveAndPositionOrder() async throws {
        let path = NSTemporaryDirectory() + "haul-batch-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteDownloadStore.open(path: path)
        var records: [DownloadRecord] = []
        for index in 0..<2500 { // more than one statement's worth of rows
            var record = DownloadRecord(
                id: DownloadID(rawValue: String(format: "id%05d", index)),
                request: try DownloadRequest(url: RemoteURL("http://h/\(index)"), destination: .directory("/tmp")),
                createdAt: 100)
            record.position = Int64(5000 - index)
            records.append(record)
        }
        try await store.save(records)
        let stored = try await store.records(status: nil)
        #expect(stored.count == 2500)
        #expect(stored.map(\.id) == records.reversed().map(\.id), "ordered by position")
        #expect(try await store.counts() == [.queued: 2500])
        try await store.close()
    }
}
