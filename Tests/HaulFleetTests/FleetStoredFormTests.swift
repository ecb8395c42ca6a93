import Foundation
import Haul
import HaulCore
import HaulFleet
import HaulTesting
import Testing

/// Credentials in the one form both stores use, against a real PostgreSQL: a row in the old
/// form is converted by the schema's step 3 and read back equal; a column that cannot be read
/// fails its download (stored so, its lease released) instead of being run without it.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FleetStoredFormTests {
    let credentials = Credentials(user: "ul:la%", password: #"p"w:%3A£"#)

    func location(_ server: PostgresServer) throws -> PostgresLocation {
        try PostgresLocation(parsing: server.url + "?sslmode=disable")
    }

    func queued(_ index: Int) -> DownloadRecord {
        var record = DownloadRecord(
            id: .random(),
            request: try! DownloadRequest(
                url: try! RemoteURL("http://127.0.0.1:9/f\(index)"), destination: .directory("/tmp/forms"),
                headers: ["Cookie": "sid=\(index)", "X-Token": "a:b"]),
            createdAt: 1)
        record.request.credentials = credentials
        record.position = Int64(index)
        return record
    }

    @Test func credentialsInTheOldFormAreMigratedAndReadBackEqual() async throws {
        let server = try await PostgresServer.start()
        let store = try await PostgresDownloadStore.open(try location(server), host: "a")
        let records = [queued(0), queued(1)]
        try await store.save(records)
        await store.close()
        // As schema 2 kept them: `user:password`, `%` and `:` escaped in each.
        _ = try await server.psql(#"UPDATE haul_downloads SET credentials = 'ul%3Ala%25:p"w%3A%253A£'"#)
        _ = try await server.psql("UPDATE haul_schema SET version = 2")

        let migrated = try await PostgresDownloadStore.open(try location(server), host: "a")
        #expect(try await server.psql("SELECT version FROM haul_schema") == "6")
        for record in records {
            let read = try #require(try await migrated.record(record.id))
            #expect(read.request == record.request)
            #expect(read.request.credentials == credentials)
            #expect(read.status == .queued && read.error == nil)
        }
        let claimed = try await migrated.claim(limit: 5, excluding: [])
        #expect(claimed.map(\.id) == records.map(\.id))
        #expect(claimed.allSatisfy { $0.request.credentials == credentials })
        await migrated.close()
        await server.destroy()
    }

    /// `--sequential` is kept with the record and shown in its own column (schema step 6); a
    /// record without it reads as not sequential.
    @Test func theSequentialSettingIsStoredAndInItsColumn() async throws {
        let server = try await PostgresServer.start()
        let store = try await PostgresDownloadStore.open(try location(server), host: "a")
        var inOrder = queued(0)
        inOrder.request.sequential = true
        let plain = queued(1)
        try await store.save([inOrder, plain])
        #expect(try await store.record(inOrder.id)?.request.sequential == true)
        #expect(try await store.record(plain.id)?.request.sequential == false)
        let column = try await server.psql("SELECT id FROM haul_downloads WHERE sequential")
        #expect(column == inOrder.id.rawValue)
        await store.close()
        await server.destroy()
    }

    @Test func unreadableCredentialsFailTheirDownloadInsteadOfRunningWithout() async throws {
        let server = try await PostgresServer.start()
        let store = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        let records = [queued(0), queued(1)]
        try await store.save(records)
        _ = try await server.psql(
            "UPDATE haul_downloads SET credentials = 'hunter2' WHERE id = '\(records[0].id.rawValue)'")

        let read = try #require(try await store.record(records[0].id))
        #expect(read.status == .failed && read.request.credentials == nil)
        #expect(read.error?.code == .store)
        #expect(
            read.error?.message.contains("download \(records[0].id): its stored credentials cannot be read") == true)
        #expect(read.error?.cause == "not JSON")
        #expect(!"\(read.error!)".contains("hunter2"), "the reason never quotes the stored text")
        // A claim reads both: the unreadable one failed, with why, still held; what becomes of it
        // is the queue's decision (a probe host claims and lets both go again).
        let probe = try await PostgresDownloadStore.open(
            try location(server), host: "probe", leaseTimeout: .seconds(600))
        let claimed = try await probe.claim(limit: 5, excluding: [])
        #expect(Set(claimed.map(\.id)) == Set(records.map(\.id)))
        #expect(claimed.first { $0.id == records[0].id }?.status == .failed)
        #expect(claimed.first { $0.id == records[1].id }?.request.credentials == credentials)
        for record in claimed { try await probe.release(record.id) }
        await probe.close()
        // A host's queue runs only the readable one; the other is stored failed, with why, and let go.
        let state = NSTemporaryDirectory() + "haul-forms-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let manager = try await DownloadManager(
            configuration: .init(stateDirectory: state, maxConcurrentDownloads: 5, retry: RetryPolicy(maxAttempts: 1)),
            fleet: store
        ).runningInATask()
        try await manager.restore()
        let released = """
            SELECT status || ' ' || (lease_owner IS NULL)::text || ' ' || credentials FROM haul_downloads WHERE id = '\(records[0].id.rawValue)'
            """
        var row = ""
        for _ in 0..<600 where row != "failed true hunter2" {
            row = try await server.psql(released)
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(row == "failed true hunter2", "failed, released, and the column left as it was")
        let stored = try #require(try await manager.record(records[0].id))
        #expect(stored.status == .failed && stored.error?.message.contains("credentials cannot be read") == true)
        // The readable one ran (against a port where nothing listens): its end is its own.
        var other = try await manager.record(records[1].id)
        for _ in 0..<600 where other?.status != .failed {
            try await Task.sleep(for: .milliseconds(50))
            other = try await manager.record(records[1].id)
        }
        #expect(other?.status == .failed && other?.error?.code == .network, "\(String(describing: other?.error))")
        await manager.shutdown()
        await server.destroy()
    }
}
