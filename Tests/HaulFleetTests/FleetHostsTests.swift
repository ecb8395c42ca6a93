import Foundation
import Haul
import HaulCore
import HaulFleet
import HaulTesting
import Testing

/// Two hosts (two real managers, each with its own store connection and name) on one real
/// PostgreSQL, one test server and one download directory.
@Suite(.serialized, .timeLimit(.minutes(4))) struct FleetHostsTests {
    struct Hosts {
        let database: PostgresServer
        let server: TestServer
        let root: String
        let directory: String

        static func make() async throws -> Hosts {
            let root = NSTemporaryDirectory() + "haul-fleet-\(UUID().uuidString)"
            let directory = root + "/downloads"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return Hosts(
                database: try await PostgresServer.start(), server: try await TestServer.start(), root: root,
                directory: directory)
        }

        /// Host `name`'s state directory, made.
        func stateDirectory(_ name: String) throws -> String {
            let state = root + "/state-\(name)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            return state
        }

        /// A connection to the fleet's database as host `name`.
        func store(_ name: String, leaseTimeout: Duration) async throws -> PostgresDownloadStore {
            try await PostgresDownloadStore.open(
                try PostgresLocation(parsing: database.url + "?sslmode=disable"), host: name, leaseTimeout: leaseTimeout
            )
        }

        func host(
            _ name: String, jobs: Int, leaseTimeout: Duration = .seconds(15),
            renewInterval: Duration? = nil
        ) async throws -> DownloadManager {
            let state = try stateDirectory(name)
            let store = try await store(name, leaseTimeout: leaseTimeout)
            var configuration = DownloadManager.Configuration(
                stateDirectory: state, maxConcurrentDownloads: jobs, checkpointInterval: .milliseconds(100),
                progressInterval: .milliseconds(50),
                retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50)))
            configuration.fleetRenewInterval = renewInterval
            let manager = try await DownloadManager(configuration: configuration, fleet: store).runningInATask()
            try await manager.restore()
            return manager
        }

        func close(_ managers: [DownloadManager]) async throws {
            for manager in managers { await manager.shutdown() }
            try await server.shutdown()
            await database.destroy()
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    /// Every listed download ended (completed or failed); bounded, so a stuck fleet fails.
    func waitUntilEnded(_ manager: DownloadManager, _ ids: [DownloadID]) async throws -> [DownloadRecord] {
        for _ in 0..<1500 {
            let records = try await manager.records(ids)
            if records.count == ids.count, records.allSatisfy({ $0.status == .completed || $0.status == .failed }) {
                return records
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HaulError(.internal, "the downloads never ended")
    }

    /// Host a completed a group's last download and died before writing its finish: host b,
    /// running all along, finds the group within a lease (its tick looks at the unfinished groups)
    /// and writes it.
    ///
    /// Leases of 12 s: a database call may take a third of a lease (4 s). With 4 s leases (1.33 s
    /// per call) the whole suite's load on two cores, headless Chromium beside it, made every
    /// call of b's time out, twice in a row, and the group was never finished.
    @Test func aGroupWhoseHostDiedBeforeItsFinishIsFinishedByAnother() async throws {
        let hosts = try await Hosts.make()
        let b = try await hosts.host("b", jobs: 1, leaseTimeout: .seconds(12))
        // What a left in the database: the download completed, its group waiting.
        let a = try await hosts.store("a", leaseTimeout: .seconds(12))
        var done = DownloadRecord(
            id: .random(),
            request: try DownloadRequest(
                url: RemoteURL(hosts.server.url("/a.bin")), destination: .file(hosts.directory + "/blobs/a.bin")),
            createdAt: 1)
        done.status = .completed
        try await a.save(done)
        let group = DownloadGroup(
            id: .random(), name: "hf://org/model", directory: hosts.directory, members: [done.id],
            finish: .hubCache(HubCacheFinish(links: [], ref: .init(path: "refs/main", commit: "c0ffee"))),
            createdAt: 1)
        try await a.saveGroup(group)
        await a.close()
        // Stored finished only after its finish is written: wait for that, then read the file.
        var state: DownloadGroup.State?
        for _ in 0..<600 where state != .finished {
            state = try await b.groups(containing: done.id).first?.state
            if state != .finished { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(state == .finished)
        #expect(FileManager.default.contents(atPath: hosts.directory + "/refs/main") == Data("c0ffee".utf8))
        try await hosts.close([b])
    }

    /// Forty URLs whose files all call themselves `file.bin`, added on two hosts at once into
    /// one directory: every download gets a name of its own, and every file holds its own URL's
    /// bytes (before names were reserved in the store, two hosts took one name and one of the
    /// downloads failed on the `.part` the other had made).
    @Test func twoHostsNeverGiveOneNameToTwoURLs() async throws {
        let hosts = try await Hosts.make()
        let a = try await hosts.host("a", jobs: 8)
        let b = try await hosts.host("b", jobs: 8)
        let payloads = (0..<40).map { Payload(seed: UInt64(500 + $0), length: 96_000) }
        for (index, payload) in payloads.enumerated() {
            hosts.server.setRoute("/u\(index)/file.bin", Route(payload: payload, throttle: 400_000))
        }
        func requests(_ range: Range<Int>) throws -> [DownloadRequest] {
            try range.map {
                try DownloadRequest(
                    url: RemoteURL(hosts.server.url("/u\($0)/file.bin")), destination: .directory(hosts.directory))
            }
        }
        async let onA = a.add(try requests(0..<20))
        async let onB = b.add(try requests(20..<40))
        let added = try await onA + onB
        let records = try await waitUntilEnded(a, added.map(\.id))
        #expect(records.allSatisfy { $0.status == .completed }, "\(records.compactMap(\.error))")
        let names = records.compactMap(\.fileName)
        #expect(names.count == 40 && Set(names).count == 40, "\(names.sorted())")
        for record in records {
            let index = try #require(added.firstIndex { $0.id == record.id })
            let path = hosts.directory + "/" + (record.fileName ?? "?")
            #expect(payloads[index].mismatch(inFileAt: path) == nil, "\(path) is not \(record.request.url)'s file")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: hosts.directory)
        #expect(files.count == 40 && !files.contains { $0.hasSuffix(".part") }, "\(files.sorted())")
        try await hosts.close([a, b])
    }

    /// A pause asked on host a of a download running on host b reaches b through the database's
    /// notification: both hosts renew (and so poll for commands) only once a minute here, so
    /// the pause could not land within the asking host's wait (10 s) any other way.
    @Test func aPauseReachesTheHostRunningTheDownloadByNotification() async throws {
        let hosts = try await Hosts.make()
        let b = try await hosts.host("b", jobs: 1, leaseTimeout: .seconds(600), renewInterval: .seconds(60))
        hosts.server.setRoute("/long.bin", Route(payload: Payload(seed: 9, length: 40_000_000), throttle: 200_000))
        let record = try await b.add(
            DownloadRequest(url: RemoteURL(hosts.server.url("/long.bin")), destination: .directory(hosts.directory)))
        for _ in 0..<300 where try await b.record(record.id)?.status != .running {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await b.fleetRuns([record.id])[record.id]?.host == "b")
        // Only now: a must not claim it first.
        let a = try await hosts.host("a", jobs: 1, leaseTimeout: .seconds(600), renewInterval: .seconds(60))
        let asked = ContinuousClock.now
        try await a.pause(record.id)
        let took = ContinuousClock.now - asked
        print("fleet pause across hosts took \(took)")
        #expect(try await a.record(record.id)?.status == .paused)
        // b saved the pause, then ends its lease.
        var runs = await a.fleetRuns([record.id])
        for _ in 0..<250 where !runs.isEmpty {
            try await Task.sleep(for: .milliseconds(20))
            runs = await a.fleetRuns([record.id])
        }
        #expect(runs.isEmpty, "b gave its lease up")
        #expect(try await b.record(record.id)?.status == .paused)
        try await hosts.close([a, b])
    }

    /// A batch pause asked on host a, of a download running on b, a queued one and a finished
    /// one: refused whole (the running one runs on, the queued one stays queued); without the
    /// finished one, both are paused.
    @Test func aBatchPauseAcrossHostsIsAllOrNothing() async throws {
        let hosts = try await Hosts.make()
        let b = try await hosts.host("b", jobs: 1, leaseTimeout: .seconds(600))
        hosts.server.setRoute("/done.bin", Route(payload: Payload(seed: 20, length: 10_000)))
        hosts.server.setRoute("/long.bin", Route(payload: Payload(seed: 21, length: 40_000_000), throttle: 200_000))
        hosts.server.setRoute("/next.bin", Route(payload: Payload(seed: 22, length: 40_000_000), throttle: 200_000))
        func request(_ path: String) throws -> DownloadRequest {
            try DownloadRequest(url: RemoteURL(hosts.server.url(path)), destination: .directory(hosts.directory))
        }
        let done = try await b.add(request("/done.bin"))
        _ = try await waitUntilEnded(b, [done.id])
        let long = try await b.add(request("/long.bin"))
        for _ in 0..<300 where try await b.record(long.id)?.status != .running {
            try await Task.sleep(for: .milliseconds(50))
        }
        // b's one slot is taken: this one waits in the queue (or runs on a once a claims it).
        let next = try await b.add(request("/next.bin"))
        let a = try await hosts.host("a", jobs: 1, leaseTimeout: .seconds(600))
        let refused = await #expect(throws: HaulError.self) { try await a.pause([long.id, next.id, done.id]) }
        #expect(refused?.code == .conflict)
        #expect(try await a.record(long.id)?.status == .running)
        let nextStatus = try await a.record(next.id)?.status
        #expect(nextStatus == .queued || nextStatus == .running)
        #expect(await a.fleetRuns([long.id])[long.id]?.host == "b")
        #expect(try await a.pause([long.id, next.id]) == 2)
        #expect(try await a.record(long.id)?.status == .paused)
        #expect(try await a.record(next.id)?.status == .paused)
        try await hosts.close([a, b])
    }

    /// A host restarted under its name (its process gone) runs its downloads again at once,
    /// instead of after the lease timeout (ten minutes here).
    @Test func aRestartedHostRunsItsDownloadsAgainAtOnce() async throws {
        let hosts = try await Hosts.make()
        let payload = Payload(seed: 11, length: 3_000_000)
        hosts.server.setRoute("/slow.bin", Route(payload: payload, throttle: 2_000_000))
        // The process before: it claimed the download and died holding it (its connection, and
        // the lock on its name, gone; the lease live for ten minutes).
        let before = try await hosts.store("a", leaseTimeout: .seconds(600))
        var record = DownloadRecord(
            id: .random(),
            request: try DownloadRequest(
                url: RemoteURL(hosts.server.url("/slow.bin")), destination: .directory(hosts.directory)),
            createdAt: 1)
        record.status = .queued
        try await before.save([record])
        #expect(try await before.claim(limit: 1, excluding: []).map(\.id) == [record.id])
        record.status = .running
        try await before.save(record)
        await before.close()
        #expect(
            try await hosts.database.psql("SELECT lease_owner FROM haul_downloads WHERE lease_expires > now()") == "a")
        let a = try await hosts.host("a", jobs: 1, leaseTimeout: .seconds(600))
        let ended = try await waitUntilEnded(a, [record.id])
        #expect(ended.first?.status == .completed)
        #expect(payload.mismatch(inFileAt: hosts.directory + "/slow.bin") == nil)
        try await hosts.close([a])
    }
}

extension DownloadManager {
    /// Runs a host's manager in a task of the test's own, as the daemon's service group would;
    /// `shutdown()` ends it.
    func runningInATask() async throws -> DownloadManager {
        try await prepareToRun()
        Task { await run() }
        return self
    }
}
