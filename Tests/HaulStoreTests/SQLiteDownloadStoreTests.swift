import Foundation
import HaulCore
import HaulStore
import Testing

@Suite(.timeLimit(.minutes(2))) struct SQLiteDownloadStoreTests {
    let directory: String = {
        let path = NSTemporaryDirectory() + "haul-store-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    var databasePath: String { directory + "/haul.sqlite" }

    func record(_ url: String, priority: Int = 0, createdAt: Int64 = 1) throws -> DownloadRecord {
        let request = try DownloadRequest(
            url: RemoteURL(url), destination: .directory(directory), range: ByteRange(start: 5, end: 99),
            checksum: Checksum(parsing: "md5=" + String(repeating: "a", count: 32)),
            headers: ["Authorization": "Bearer x", "X-A": "1"], maxAttempts: 7, priority: priority)
        return DownloadRecord(id: .random(), request: request, createdAt: createdAt)
    }

    /// The waiting list's read of paused downloads: their places in queue order, the same as
    /// the records'.
    @Test func placesAreThoseOfTheRecordsInQueueOrder() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        var saved: [DownloadRecord] = []
        for (index, priority) in [0, 2, 0, 1, 2].enumerated() {
            var paused = try record("http://h/\(index)", priority: priority)
            paused.status = .paused
            paused.position = Int64(100 - index * 10)
            saved.append(paused)
        }
        var queued = try record("http://h/q")
        queued.status = .queued
        try await store.save(saved + [queued])
        let places = try await store.places(status: .paused)
        // A stored place names no probe host: a paused download is never sent past -j, and its
        // resume starts from its record.
        let expected = saved.map { record in
            var entry = WaitingQueue.Entry(record)
            entry.probeHost = nil
            return entry
        }
        #expect(places == expected.sorted { $0.runsBefore($1) })
        #expect(places.map(\.id) == (try await store.ids(status: .paused)))
        try await store.close()
    }

    @Test func everyFieldSurvivesAReopen() async throws {
        var original = try record("http://h/a.iso")
        original.status = .paused
        original.fileName = "a.iso"
        original.finalURL = "http://mirror/a.iso"
        original.validator = EntityValidator(etag: "\"e1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        original.totalLength = 1000
        original.segments = [Segment(start: 5, end: 99, written: 42)]
        original.error = HaulError(.network, "reset", httpStatus: nil, cause: "ECONNRESET")
        original.serverDigest = ServerDigest(
            Checksum(algorithm: .sha512, hex: String(repeating: "ab", count: 64)), from: .reprDigest)
        original.request.mirrors = [try RemoteURL("http://other/a.iso")]
        original.request.cookies = SourceCookies(
            jar: CookieJar([Cookie(name: "sid", value: "v=1", domain: "h")]),
            urls: original.request.sources, now: 0)
        #expect(original.request.cookies.field(for: original.request.url) == "sid=v=1")

        let store = try await SQLiteDownloadStore.open(path: databasePath)
        try await store.save(original)
        try await store.close()

        let reopened = try await SQLiteDownloadStore.open(path: databasePath)
        let loaded = try await reopened.record(original.id)
        #expect(loaded == original)
        #expect(try await reopened.record(matching: original.request)?.id == original.id)
        try await reopened.close()
    }

    /// Saves made at once are committed together (group commit) and each caller's own write is
    /// there when its save returns; the later of two saves of one record wins, as one at a time.
    @Test func concurrentSavesAllLandAndTheLaterVersionWins() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        let records = try (0..<300).map { try record("http://h/\($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for record in records {
                group.addTask {
                    var first = record
                    first.status = .running
                    try await store.save(first)
                    var second = record
                    second.status = .failed
                    var third = record
                    third.status = .completed
                    // One batch with two versions of the same record.
                    try await store.save([second, third])
                    #expect(try await store.record(record.id)?.status == .completed)
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.counts() == [.completed: 300])
        let found = try await store.records(matching: records.map(\.request))
        #expect(Set(found.values.map(\.id)) == Set(records.map(\.id)))
        try await store.close()
    }

    /// Credentials are written only by a store that keeps them, whose file is private; a store
    /// that keeps none leaves those stored before alone.
    @Test func credentialsOnlyWhereKeptAndPrivate() async throws {
        var download = try record("http://h/secret")
        download.request.credentials = Credentials(user: "u", password: "pw")
        let plain = try await SQLiteDownloadStore.open(path: databasePath)
        try await plain.save(download)
        #expect(try await plain.record(download.id)?.request.credentials == nil)
        try await plain.close()

        let keeping = try await SQLiteDownloadStore.open(path: databasePath, keepsCredentials: true)
        try await keeping.save(download)
        #expect(try await keeping.record(download.id)?.request.credentials == download.request.credentials)
        try await keeping.close()
        let mode = try FileManager.default.attributesOfItem(atPath: databasePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let again = try await SQLiteDownloadStore.open(path: databasePath)
        download.status = .paused
        try await again.save(download)
        #expect(try await again.record(download.id)?.request.credentials == download.request.credentials)
        try await again.close()
    }

    @Test func saveReplacesTheRowAtomically() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        var download = try record("http://h/b")
        try await store.save(download)
        download.segments[0].written = 77
        download.status = .running
        try await store.save(download)
        let all = try await store.records(status: nil)
        #expect(all.count == 1)
        #expect(FileManager.default.fileExists(atPath: databasePath + "-wal"), "WAL journal in use")
        #expect(all.first?.completedLength == 77)
        #expect(try await store.records(status: .running).count == 1)
        #expect(try await store.records(status: .queued).isEmpty)
        try await store.close()
    }

    @Test func queueOrderIsPriorityThenAge() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        let old = try record("http://h/1", priority: 0, createdAt: 1)
        let young = try record("http://h/2", priority: 0, createdAt: 2)
        let urgent = try record("http://h/3", priority: 5, createdAt: 3)
        for download in [young, urgent, old] { try await store.save(download) }
        #expect(try await store.records(status: nil).map(\.id) == [urgent.id, old.id, young.id])
        try await store.close()
    }

    @Test func fileNamesAndRemovedRecords() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        var first = try record("http://h/x")
        first.fileName = "x"
        try await store.save(first)
        let other = DownloadID.random()
        #expect(try await store.isFileNameTaken("x", directory: directory, except: other))
        #expect(try await !store.isFileNameTaken("x", directory: directory, except: first.id))
        #expect(try await !store.isFileNameTaken("x", directory: "/elsewhere", except: other))
        first.status = .removed
        try await store.save(first)
        #expect(try await !store.isFileNameTaken("x", directory: directory, except: other))
        #expect(try await store.record(matching: first.request) == nil, "removed records are not resumed")
        try await store.delete(first.id)
        #expect(try await store.record(first.id) == nil)
        try await store.close()
    }

    /// A batch of adds looks its names up in one query; the answer is the one-by-one lookup's.
    @Test func fileNameHoldersAnswerAsOneByOne() async throws {
        let store = try await SQLiteDownloadStore.open(path: databasePath)
        var held: [DownloadRecord] = []
        for index in 0..<450 {
            var next = try record("http://h/\(index)")
            next.fileName = "f\(index)"
            if index % 3 == 0 { next.status = .removed }
            held.append(next)
        }
        try await store.save(held)
        let directory = held[0].request.directory
        let asked =
            (0..<460).map { FileNamePlace(directory: directory, fileName: "f\($0)") }
            + [FileNamePlace(directory: "/elsewhere", fileName: "f1")]
        let holders = try await store.fileNameHolders(asked)
        for place in asked {
            let one = try await store.fileNameHolder(
                place.fileName, directory: place.directory, except: DownloadID(rawValue: ""))
            #expect(holders[place] == one, "\(place)")
        }
        #expect(holders.count == 300, "removed records and unknown names hold nothing")
        try await store.close()
    }

    @Test func garbageDatabaseIsAClearError() async throws {
        try Data("this is not sqlite, just text that is long enough to have a header".utf8).write(
            to: URL(fileURLWithPath: databasePath))
        await #expect {
            _ = try await SQLiteDownloadStore.open(path: databasePath)
        } throws: { error in
            (error as? HaulError)?.code == .store
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct ConcurrentOpenTests {
    @Test func manyConnectionsCreatingTheSameDatabaseAtOnce() async throws {
        let path = NSTemporaryDirectory() + "haul-open-\(UUID().uuidString).sqlite"
        let stores = try await withThrowingTaskGroup(of: SQLiteDownloadStore.self) { group in
            for _ in 0..<8 { group.addTask { try await SQLiteDownloadStore.open(path: path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let request = try DownloadRequest(url: RemoteURL("http://h/x"), destination: .directory("/tmp"))
        let record = DownloadRecord(id: .random(), request: request, createdAt: 1)
        try await stores[0].save(record)
        for store in stores {
            #expect(try await store.record(record.id) == record)
            try await store.close()
        }
    }
}
