import Foundation
import HaulCore
import HaulFleet
import HaulTesting
import Testing

/// What the shared store itself guarantees, against a real PostgreSQL: a host's name is its own
/// while it lives and its leases come back to it at once after a restart; a batch pause or
/// resume is all or nothing; a file name goes to one live download at a time.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FleetNameAndBatchTests {
    func location(_ server: PostgresServer) throws -> PostgresLocation {
        try PostgresLocation(parsing: server.url + "?sslmode=disable")
    }

    func queued(_ count: Int, directory: String = "/tmp/fleet") -> [DownloadRecord] {
        (0..<count).map { index in
            var record = DownloadRecord(
                id: .random(),
                request: try! DownloadRequest(
                    url: try! RemoteURL("http://127.0.0.1:9/f\(index)"), destination: .directory(directory)),
                createdAt: 1)
            record.status = .queued
            record.position = Int64(index)
            return record
        }
    }

    @Test func aRestartedHostTakesItsLeasesBackAtOnceAndItsNameIsItsOwn() async throws {
        let server = try await PostgresServer.start()
        // Ten minutes: nothing here may wait for a lease to run out.
        let first = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        let other = try await PostgresDownloadStore.open(try location(server), host: "b", leaseTimeout: .seconds(600))
        let records = queued(3)
        try await first.save(records)
        let held = try await first.claim(limit: 2, excluding: [])
        #expect(held.map(\.id) == records.prefix(2).map(\.id))
        // A second live process under the same name is refused, one line, its own code.
        let refused = await #expect(throws: HaulError.self) {
            try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        }
        #expect(refused?.code == .fleetNameInUse && refused?.message.contains("--fleet-name") == true)
        // The process goes away (its session, and the lock on its name, end) with its leases live.
        await first.close()
        #expect(
            try await other.claim(limit: 5, excluding: []).map(\.id) == [records[2].id], "live leases are not anyone's")
        let restarted = try await PostgresDownloadStore.open(
            try location(server), host: "a", leaseTimeout: .seconds(600))
        let back = try await restarted.claim(limit: 5, excluding: [])
        #expect(Set(back.map(\.id)) == Set(held.map(\.id)))
        #expect(back.allSatisfy { restarted.holds($0.id) })
        // With the next generation: a save under the old one would be fenced.
        let generations = try await server.psql(
            """
            SELECT string_agg(lease_generation::text, ',' ORDER BY position) FROM haul_downloads WHERE \
            lease_owner = 'a'
            """
        )
        #expect(generations == "2,2")
        // Its own live leases are not claimed twice.
        #expect(try await restarted.claim(limit: 5, excluding: []).isEmpty)
        await restarted.close()
        await other.close()
        await server.destroy()
    }

    @Test func aBatchPauseIsAllOrNothing() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        let b = try await PostgresDownloadStore.open(try location(server), host: "b", leaseTimeout: .seconds(600))
        var records = queued(4)
        records[3].status = .completed
        try await a.save(records)
        let running = try #require(try await b.claim(limit: 1, excluding: []).first)
        #expect(running.id == records[0].id)
        // One finished download in the batch: nothing is paused, and no command is left.
        let refused = await #expect(throws: HaulError.self) { try await a.pause(records.map(\.id)) }
        #expect(refused?.code == .conflict && refused?.message.contains(records[3].id.rawValue) == true)
        #expect(try await a.records(status: .queued).count == 3)
        #expect(try await b.renew([:]).commands.isEmpty)
        let unknown = await #expect(throws: HaulError.self) { try await a.pause([records[1].id, .random()]) }
        #expect(unknown?.code == .notFound)
        #expect(try await a.record(records[1].id)?.status == .queued)
        // Without it: the unheld ones at once, the held one through its holder.
        let results = try await a.pause(records.prefix(3).map(\.id))
        #expect(results[records[0].id] == .leftForHolder)
        for record in records[1...2] {
            guard case .applied(let paused, let before)? = results[record.id] else {
                Issue.record("\(record.id) was not paused at once")
                continue
            }
            #expect(paused.status == .paused && before == .queued)
        }
        #expect(try await b.renew([:]).commands == [records[0].id: .pause])
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func aBatchResumeIsAllOrNothing() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        let b = try await PostgresDownloadStore.open(try location(server), host: "b", leaseTimeout: .seconds(600))
        var records = queued(3)
        try await a.save(records)
        _ = try await a.pause(records.map(\.id))
        // Resumed and claimed on b meanwhile.
        records[0].status = .queued
        try await b.save([records[0]])
        #expect(try await b.claim(limit: 1, excluding: []).first?.id == records[0].id)
        // a resumes all three from what it read before: one runs on b, so none changes.
        let again = records.map { record -> DownloadRecord in
            var record = record
            record.status = .queued
            return record
        }
        let refused = await #expect(throws: HaulError.self) { try await a.save(again) }
        #expect(refused?.code == .conflict)
        #expect(
            try await a.records(status: .paused).map(\.id).sorted { $0.rawValue < $1.rawValue }
                == records[1...2].map(\.id).sorted { $0.rawValue < $1.rawValue })
        try await a.save(Array(again[1...2]))
        #expect(try await a.records(status: .queued).count == 3)
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func aFileNameGoesToOneLiveDownload() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(600))
        let b = try await PostgresDownloadStore.open(try location(server), host: "b", leaseTimeout: .seconds(600))
        let records = queued(40, directory: "/tmp/names")
        try await a.save(records)
        let mine = try await a.claim(limit: 20, excluding: [])
        let theirs = try await b.claim(limit: 20, excluding: [])
        #expect(mine.count == 20 && theirs.count == 20)
        // Forty downloads on two hosts take names at once, each trying file.bin, file.1.bin, ...
        let names = try await withThrowingTaskGroup(of: (DownloadID, String).self) { group in
            for (store, record) in mine.map({ (a, $0) }) + theirs.map({ (b, $0) }) {
                group.addTask {
                    for attempt in 0..<100 {
                        let name = attempt == 0 ? "file.bin" : "file.\(attempt).bin"
                        if try await store.reserveFileName(name, directory: "/tmp/names", for: record.id) {
                            return (record.id, name)
                        }
                    }
                    throw HaulError(.fileExists, "no name for \(record.id)")
                }
            }
            var names: [DownloadID: String] = [:]
            for try await (id, name) in group { names[id] = name }
            return names
        }
        #expect(names.count == 40 && Set(names.values).count == 40, "\(names.values.sorted())")
        let stored = try await server.psql(
            "SELECT count(DISTINCT file_name) FROM haul_downloads WHERE directory = '/tmp/names'")
        #expect(stored == "40")
        // The index refuses a second live holder, whatever the caller checked before.
        var duplicate = queued(1, directory: "/tmp/names")[0]
        duplicate.fileName = names[mine[0].id]
        let error = await #expect(throws: HaulError.self) { try await a.save([duplicate]) }
        #expect(error?.code == .fileExists)
        await a.close()
        await b.close()
        await server.destroy()
    }

    /// A database written before the unique index, holding two live downloads with one name:
    /// the later is paused, the earlier and a finished one are untouched.
    @Test func theNameIndexMigrationPausesTheLaterOfEachPair() async throws {
        let server = try await PostgresServer.start()
        let store = try await PostgresDownloadStore.open(try location(server), host: "a")
        await store.close()
        let records = queued(3, directory: "/tmp/old")
        _ = try await server.psql("DROP INDEX haul_downloads_live_name")
        _ = try await server.psql("UPDATE haul_schema SET version = 1")
        for (index, record) in records.enumerated() {
            let json = String(decoding: try JSONEncoder().encode(record), as: UTF8.self).replacingOccurrences(
                of: "'", with: "''")
            let status = index == 2 ? "completed" : "queued"
            _ = try await server.psql(
                """
                INSERT INTO haul_downloads (id, identity, status, priority, position, created_at, directory, file_name, record)
                VALUES ('\(record.id.rawValue)', 'i\(index)', '\(status)', 0, \(index), \(10 - index), '/tmp/old', 'same.bin', '\(json)')
                """)
        }
        let migrated = try await PostgresDownloadStore.open(try location(server), host: "a")
        // Created at 10, 9 and 8: the second is the earlier of the two live ones.
        #expect(try await migrated.record(records[1].id)?.status == .queued)
        #expect(try await migrated.record(records[0].id)?.status == .paused)
        #expect(try await migrated.record(records[2].id)?.status == .completed)
        #expect(try await server.psql("SELECT version FROM haul_schema") == "6")
        await migrated.close()
        await server.destroy()
    }
}
