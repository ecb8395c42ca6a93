import Foundation
import HaulCore
import HaulFleet
import HaulTesting
import Testing

/// The shared store against a real PostgreSQL: claims are exclusive, writes are fenced by the
/// lease generation, commands reach the holder, and a newer schema is refused untouched.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FleetStoreTests {
    func location(_ server: PostgresServer) throws -> PostgresLocation {
        try PostgresLocation(parsing: server.url + "?sslmode=disable")
    }

    func queued(_ count: Int) -> [DownloadRecord] {
        (0..<count).map { index in
            var record = DownloadRecord(
                id: .random(),
                request: try! DownloadRequest(
                    url: try! RemoteURL("http://127.0.0.1:9/f\(index)"), destination: .directory("/tmp/fleet")),
                createdAt: 1)
            record.status = .queued
            record.position = Int64(index)
            return record
        }
    }

    /// A group one host saves is every host's: found by a member, listed while unfinished, and
    /// its state changed by another host.
    @Test func groupsAreSharedByEveryHost() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a")
        let b = try await PostgresDownloadStore.open(try location(server), host: "b")
        let members = queued(3).map(\.id)
        var group = DownloadGroup(
            id: .random(), name: "hf://org/model", directory: "/cache", members: members,
            files: [DownloadGroup.File(path: "blobs/1", size: 9)],
            finish: .hubCache(
                HubCacheFinish(
                    links: [.init(link: "snapshots/x/config.json", target: "../../blobs/1")],
                    ref: .init(path: "refs/main", commit: "x"))), createdAt: 5)
        try await a.saveGroup(group)
        #expect(try await b.group(group.id) == group)
        #expect(try await b.groups(containing: members[2]) == [group])
        #expect(try await b.groups(containing: DownloadID.random()) == [])
        #expect(try await b.unfinishedGroups() == [group])
        group.state = .finished
        try await b.saveGroup(group)
        #expect(try await a.unfinishedGroups() == [])
        #expect(try await a.group(group.id)?.state == .finished)
        try await a.deleteGroup(group.id)
        #expect(try await b.group(group.id) == nil)
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func claimsAreExclusiveAndFollowTheQueueOrder() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a")
        let b = try await PostgresDownloadStore.open(try location(server), host: "b")
        var records = queued(10)
        // The server's digest goes with the record's JSON, so another host's resume checks it.
        records[3].serverDigest = ServerDigest(
            Checksum(algorithm: .sha256, hex: String(repeating: "5a", count: 32)), from: .reprDigest)
        try await a.save(records)
        let first = try await a.claim(limit: 6, excluding: [])
        let second = try await b.claim(limit: 10, excluding: [])
        #expect(first.map(\.id) == records.prefix(6).map(\.id))
        #expect(first.map(\.serverDigest) == records.prefix(6).map(\.serverDigest))
        #expect(Set(second.map(\.id)) == Set(records.suffix(4).map(\.id)))
        #expect(try await a.claim(limit: 10, excluding: []).isEmpty)
        let runs = try await b.runs(records.map(\.id))
        #expect(runs.count == 10 && runs.values.filter { $0.host == "a" }.count == 6)
        await a.close()
        await b.close()
        await server.destroy()
    }

    /// A digest is an identity across hosts: a claim passes over a download whose twin (the
    /// same SHA-256, a named file) another host holds or that comes after a twin in the queue;
    /// once the twin is done (with a shared content store, its file is there to link), it is
    /// claimed. A download with an MD5 only, or none, is claimed as ever.
    @Test func aClaimPassesOverATwinOfADigestAHostHolds() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a")
        let b = try await PostgresDownloadStore.open(try location(server), host: "b")
        var records = queued(4)
        let digest = Checksum(algorithm: .sha256, hex: String(repeating: "7c", count: 32))
        for index in 0..<3 {
            records[index].request.checksum = digest
            records[index].fileName = "twin\(index).bin"
        }
        records[2].request.checksum = Checksum(algorithm: .md5, hex: String(repeating: "7c", count: 16))
        try await a.save(records)
        let first = try await a.claim(limit: 10, excluding: [])
        #expect(first.map(\.id) == [records[0].id, records[2].id, records[3].id], "the twin waits for the first")
        #expect(try await b.claim(limit: 10, excluding: []).isEmpty, "its twin is held by host a")
        var done = first[0]
        done.status = .completed
        try await a.save(done)
        try await a.release(done.id)
        #expect(try await b.claim(limit: 10, excluding: []).map(\.id) == [records[1].id])
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func aTakenOverLeaseFencesTheOldHolder() async throws {
        let server = try await PostgresServer.start()
        // 3 s: the live-lease checks below must come before it expires even on a loaded CI run
        // (with 1 s, one saw b's unfenced write accepted: the lease had already run out).
        let a = try await PostgresDownloadStore.open(try location(server), host: "a", leaseTimeout: .seconds(3))
        let b = try await PostgresDownloadStore.open(try location(server), host: "b", leaseTimeout: .seconds(3))
        try await a.save(queued(1))
        var mine = try #require(try await a.claim(limit: 1, excluding: []).first)
        mine.status = .running
        try await a.save(mine)
        // A live lease: nobody else claims it, and an unfenced write is refused.
        #expect(try await b.claim(limit: 1, excluding: []).isEmpty)
        await #expect(throws: HaulError.self) { try await b.save([mine]) }
        // Unrenewed past its expiry, it is claimed by the other host with the next generation.
        var taken: [DownloadRecord] = []
        while taken.isEmpty {
            try await Task.sleep(for: .milliseconds(200))
            taken = try await b.claim(limit: 1, excluding: [])
        }
        #expect(taken.first?.id == mine.id)
        mine.segments = [Segment(start: 0, end: nil, written: 999)]
        let refused = await #expect(throws: HaulError.self) { try await a.save(mine) }
        #expect(refused?.code == .leaseLost)
        #expect(!a.holds(mine.id) && b.holds(mine.id))
        let stored = try #require(try await b.record(mine.id))
        #expect(stored.completedLength == 0)
        // The new holder's renewals go on; the old holder hears nothing of it.
        #expect(try await b.renew([:]).lost.isEmpty)
        #expect(try await a.renew([:]) == LeaseReport())
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func commandsReachTheHolderAndApplyAtOnceToUnheldDownloads() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a")
        let b = try await PostgresDownloadStore.open(try location(server), host: "b")
        let records = queued(2)
        try await a.save(records)
        let held = try #require(try await a.claim(limit: 1, excluding: []).first)
        #expect(try await b.request(.pause, for: held.id) == .leftForHolder)
        let report = try await a.renew([held.id: Progress(completed: 42, total: 100, bytesPerSecond: 7, connections: 1)]
        )
        #expect(report.commands[held.id] == .pause && report.lost.isEmpty)
        let run = try #require(try await b.runs([held.id])[held.id])
        #expect(run.host == "a" && run.progress?.completed == 42 && run.progress?.bytesPerSecond == 7)
        // Nobody holds the second one: paused at once, and no longer claimable.
        guard case .applied(let applied, let before) = try await b.request(.pause, for: records[1].id) else {
            Issue.record("an unheld download was not paused at once")
            return
        }
        #expect(applied.status == .paused && before == .queued)
        #expect(try await b.claim(limit: 5, excluding: []).isEmpty)
        await #expect(throws: HaulError.self) { try await b.request(.remove, for: .random()) }
        await a.close()
        await b.close()
        await server.destroy()
    }

    /// A download that finished after the pause was asked for (its holder saved `completed` and
    /// released it) stays completed: the pause is a conflict. A removal says what the download
    /// was, so the manager deletes a final file only when it was the finished download's.
    @Test func anUnheldFinishedDownloadIsNotPausedAndARemovalSaysWhatItWas() async throws {
        let server = try await PostgresServer.start()
        let a = try await PostgresDownloadStore.open(try location(server), host: "a")
        let b = try await PostgresDownloadStore.open(try location(server), host: "b")
        var records = queued(2)
        records[0].status = .completed
        try await a.save(records)
        let refused = await #expect(throws: HaulError.self) { try await b.request(.pause, for: records[0].id) }
        #expect(refused?.code == .conflict)
        #expect(try await b.record(records[0].id)?.status == .completed)
        guard case .applied(let removedQueued, let wasQueued) = try await b.request(.removeWithFile, for: records[1].id)
        else {
            Issue.record("an unheld download was not removed at once")
            return
        }
        #expect(removedQueued.status == .removed && wasQueued == .queued)
        guard case .applied(let removed, let before) = try await b.request(.removeWithFile, for: records[0].id) else {
            Issue.record("an unheld download was not removed at once")
            return
        }
        #expect(removed.status == .removed && before == .completed)
        await a.close()
        await b.close()
        await server.destroy()
    }

    @Test func aNewerSchemaIsRefusedUnchanged() async throws {
        let server = try await PostgresServer.start()
        let store = try await PostgresDownloadStore.open(try location(server), host: "a")
        await store.close()
        _ = try await server.psql("UPDATE haul_schema SET version = 99")
        let error = await #expect(throws: HaulError.self) {
            try await PostgresDownloadStore.open(try location(server), host: "a")
        }
        #expect(error?.code == .storeTooNew && error?.message.contains("99") == true)
        #expect(try await server.psql("SELECT version FROM haul_schema") == "99")
        await server.destroy()
    }

    @Test func aRefusedLoginAndAnAbsentServerSaySo() async throws {
        let server = try await PostgresServer.start()
        let wrong = await #expect(throws: HaulError.self) {
            try await PostgresDownloadStore.open(
                try PostgresLocation(parsing: server.urlWithWrongPassword + "?sslmode=disable"), host: "a")
        }
        #expect(wrong?.code == .storeLogin && wrong?.message.contains("wrong-password") == false)
        await server.destroy()
        let absent = await #expect(throws: HaulError.self) {
            try await PostgresDownloadStore.open(try location(server), host: "a")
        }
        #expect(absent?.code == .storeUnavailable, "\(String(describing: absent))")
    }

    @Test func storeURLsAreParsedOrRefusedClearly() throws {
        let location = try PostgresLocation(parsing: "postgres://haul:s%40cret@db.internal:5433/queue?sslmode=require")
        #expect(location.host == "db.internal" && location.port == 5433 && location.user == "haul")
        #expect(location.password == "s@cret" && location.database == "queue" && location.tls == .require)
        #expect(!location.description.contains("cret"))
        #expect(try StoreLocation(parsing: "sqlite") == .sqlite)
        for bad in [
            "mysql://x@h/db", "postgres://h/db", "postgres://u@h", "postgres://u@h:99999/db",
            "postgres://u:pw@h/db?mode=x",
        ] {
            let error = #expect(throws: HaulError.self) { try StoreLocation(parsing: bad) }
            #expect(error?.code == .usage && error?.message.contains("pw") == false, "\(bad)")
        }
    }
}
