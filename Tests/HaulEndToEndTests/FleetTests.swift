import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// Three `haul serve` processes share one PostgreSQL queue and one download directory, as
/// three hosts would: work spreads over all of them, a killed host's downloads resume elsewhere,
/// a database outage is ridden out, and a pause holds whichever host restarts.
@Suite(.serialized, .timeLimit(.minutes(6))) struct FleetTests {
    /// The database, the test server, the shared download directory, and one home per host.
    struct Fleet {
        let database: PostgresServer
        let world: World
        var hosts: [DaemonProcess] = []

        static func make() async throws -> Fleet {
            Fleet(database: try await PostgresServer.start(), world: try await World.make())
        }

        /// Host `index`'s own HAUL_HOME; the download directory and the server are shared.
        func home(_ index: Int) -> World {
            World(server: world.server, directory: world.directory, home: world.home + "-\(index)")
        }

        func arguments(_ index: Int, _ extra: [String]) -> [String] {
            ["--store", database.url + "?sslmode=disable", "--fleet-name", "host-\(index)"] + extra
        }

        mutating func start(_ count: Int, _ extra: [String]) async throws {
            for index in 0..<count { hosts.append(try await DaemonProcess.start(home(index), arguments(index, extra))) }
        }

        func restart(_ index: Int, _ extra: [String]) async throws -> DaemonProcess {
            try await DaemonProcess.start(home(index), arguments(index, extra))
        }

        func close() async throws {
            for host in hosts { host.process.signal(SIGKILL) }
            for host in hosts { _ = await host.process.wait() }
            await database.destroy()
            try await world.close()
        }
    }

    /// Polls until every listed download is `status`; bounded, so a stuck fleet fails instead of hanging.
    @discardableResult
    func waitUntilAll(_ host: DaemonProcess, _ count: Int, are status: DownloadStatus) async throws -> [DownloadView] {
        var last: [DownloadView] = []
        for _ in 0..<3000 {
            last = try await host.list()
            if last.count == count, last.allSatisfy({ $0.status == status }) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        let counts = Dictionary(grouping: last, by: \.status).mapValues(\.count)
        let others = last.filter { $0.status != status }.prefix(5)
            .map { "\($0.id) \($0.status) on \($0.host ?? "no host") at \($0.completedLength)" }
        throw TestFailure("the fleet never had \(count) \(status): \(counts); \(others)")
    }

    func completedCount(_ host: DaemonProcess) async throws -> Int {
        let text = try await host.call(.GET, "/metrics").text
        let line = text.split(separator: "\n").first {
            $0.hasPrefix("haul_downloads_finished_total{result=\"completed\"}")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func aThousandDownloadsSpreadOverThreeHostsEachFetchedOnce() async throws {
        var fleet = try await Fleet.make()
        let payloads = (0..<1000).map { Payload(seed: UInt64(1000 + $0), length: 24_000) }
        for (index, payload) in payloads.enumerated() {
            fleet.world.server.setRoute("/f/\(index).bin", Route(payload: payload, throttle: 48_000))
        }
        try await fleet.start(3, ["-j", "8"])
        let list = fleet.world.directory + "/../urls.txt"
        try payloads.indices.map { fleet.world.server.url("/f/\($0).bin") }.joined(separator: "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let added = try await HaulProcess.run(["add", "-i", list], in: fleet.home(0))
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.split(separator: "\n").count == 1000)

        try await waitUntilAll(fleet.hosts[1], 1000, are: .completed)
        for (index, payload) in payloads.enumerated() {
            #expect(payload.mismatch(inFileAt: fleet.world.directory + "/\(index).bin") == nil, "file \(index)")
            // One response at a time per file, and exactly one request: never two hosts at once, never twice.
            #expect(fleet.world.server.peakConcurrentResponses(to: "/f/\(index).bin") == 1)
            #expect(fleet.world.server.requests(to: "/f/\(index).bin").count == 1, "file \(index)")
        }
        // Every host took a share (its own metrics count what it finished), and no file was
        // finished twice. Which host a running download is on, as the list shows it, is
        // aKilledHostsDownloadsResumeOnTheOthers's: sampling a list of 1,000 here could miss every run
        // on a loaded machine, where one look took longer than the whole fleet's work.
        var perHost: [Int] = []
        for host in fleet.hosts { perHost.append(try await completedCount(host)) }
        #expect(perHost.allSatisfy { $0 > 0 } && perHost.reduce(0, +) == 1000, "\(perHost)")
        // `haul ls` on any host lists the whole fleet.
        let table = try await HaulProcess.run(["ls", "--status", "completed"], in: fleet.home(2))
        #expect(table.status == 0 && table.stdout.split(separator: "\n").count == 1000)
        try await fleet.close()
    }

    @Test func aKilledHostsDownloadsResumeOnTheOthers() async throws {
        var fleet = try await Fleet.make()
        let payloads = (0..<6).map { Payload(seed: UInt64(50 + $0), length: 2_000_000) }
        for (index, payload) in payloads.enumerated() {
            fleet.world.server.setRoute("/big/\(index).bin", Route(payload: payload, throttle: 150_000))
        }
        try await fleet.start(3, ["-j", "2", "--lease-timeout", "3"])
        var ids: [String] = []
        for index in payloads.indices {
            ids.append(try await fleet.hosts[0].add(fleet.world.server.url("/big/\(index).bin")).id)
        }
        // Every download running with a checkpoint past zero; find the ones host-1 runs.
        var orphans: [DownloadView] = []
        for _ in 0..<2400 {
            let views = try await fleet.hosts[0].list()
            let checkpointed = views.filter { $0.status == .running && $0.host != nil }
            if checkpointed.count == 6, try await allCheckpointed(fleet, ids) {
                orphans = views.filter { $0.host == "host-1" }
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(orphans.count == 2)
        await fleet.hosts[1].kill9()

        let done = try await waitUntilAll(fleet.hosts[2], 6, are: .completed)
        #expect(done.count == 6)
        for (index, payload) in payloads.enumerated() {
            let path = "/big/\(index).bin"
            #expect(payload.mismatch(inFileAt: fleet.world.directory + "/\(index).bin") == nil, "file \(index)")
            #expect(fleet.world.server.peakConcurrentResponses(to: path) == 1, "two hosts at once on \(path)")
        }
        for orphan in orphans {
            let path = try #require(URL(string: orphan.url)?.path)
            let requests = fleet.world.server.requests(to: path)
            // Taken over from host-1's last checkpoint, not from zero.
            #expect(requests.count == 2, "\(requests.map(\.range))")
            let resumedAt = requests.last?.range.flatMap {
                Int64($0.dropFirst("bytes=".count).split(separator: "-").first ?? "")
            }
            #expect((resumedAt ?? 0) > 0, "\(String(describing: requests.last?.range))")
        }
        try await fleet.close()
    }

    /// Whether every download's stored checkpoint is past zero, read from the database.
    func allCheckpointed(_ fleet: Fleet, _ ids: [String]) async throws -> Bool {
        let count = try await fleet.database.psql(
            """
            SELECT count(*) FROM haul_downloads WHERE status = 'running' AND \
            (record::jsonb->'segments'->0->>'written')::bigint > 0
            """
        )
        return Int(count) == ids.count
    }

    @Test func aDatabaseOutageIsRiddenOut() async throws {
        var fleet = try await Fleet.make()
        let payloads = (0..<6).map { Payload(seed: UInt64(70 + $0), length: 3_000_000) }
        for (index, payload) in payloads.enumerated() {
            fleet.world.server.setRoute("/long/\(index).bin", Route(payload: payload, throttle: 150_000))
        }
        try await fleet.start(3, ["-j", "2"])
        var ids: [String] = []
        for index in payloads.indices {
            ids.append(try await fleet.hosts[0].add(fleet.world.server.url("/long/\(index).bin")).id)
        }
        for _ in 0..<2400 {
            let views = try await fleet.hosts[0].list()
            if views.filter({ $0.status == .running && $0.completedLength > 100_000 }).count == 6 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Ten seconds without the database, then it comes back.
        try await fleet.database.pause()
        try await Task.sleep(for: .seconds(10))
        try await fleet.database.resume()

        do {
            try await waitUntilAll(fleet.hosts[0], 6, are: .completed)
        } catch {
            // Each host's own account of the outage, for a fleet that stays stuck.
            let logs = fleet.hosts.enumerated().map { "host-\($0): \($1.process.stderr.suffix(3000))" }
            let rows = try await fleet.database.psql(
                "SELECT id, status, lease_owner, lease_generation, lease_expires > now(), command FROM haul_downloads")
            throw TestFailure("\(error)\nrows:\n\(rows)\n\(logs.joined(separator: "\n"))")
        }
        for (index, payload) in payloads.enumerated() {
            #expect(payload.mismatch(inFileAt: fleet.world.directory + "/\(index).bin") == nil, "file \(index)")
            #expect(fleet.world.server.peakConcurrentResponses(to: "/long/\(index).bin") == 1)
        }
        for host in fleet.hosts { #expect(host.process.process.isRunning) }
        try await fleet.close()
    }

    @Test func aPauseFromAnyHostHoldsWhicheverHostRestarts() async throws {
        var fleet = try await Fleet.make()
        let slow = Payload(seed: 90, length: 4_000_000)
        let small = Payload(seed: 91, length: 50_000)
        fleet.world.server.setRoute("/slow.bin", Route(payload: slow, throttle: 200_000))
        fleet.world.server.setRoute("/small.bin", Route(payload: small))
        try await fleet.start(3, ["-j", "2"])
        let download = try await fleet.hosts[0].add(fleet.world.server.url("/slow.bin"))
        let running = try await fleet.hosts[0].wait(
            for: download.id, status: .running, where: { $0.host != nil && $0.completedLength > 0 })
        // Paused from a host that does not run it: the CLI answers once it took effect.
        let other = try #require(["host-0", "host-1", "host-2"].firstIndex { $0 != running.host })
        let paused = try await HaulProcess.run(["pause", download.id], in: fleet.home(other))
        #expect(paused.status == 0, "\(paused.stderr)")
        let stopped = try await fleet.hosts[other].wait(for: download.id, status: .paused)
        let requestsBefore = fleet.world.server.requests(to: "/slow.bin").count

        // Every host restarts; each then works (it fetches a new download), and the pause holds.
        for index in fleet.hosts.indices {
            #expect(await fleet.hosts[index].terminate() == 0)
            fleet.hosts[index] = try await fleet.restart(index, ["-j", "2"])
        }
        let probe = try await fleet.hosts[1].add(fleet.world.server.url("/small.bin"))
        try await fleet.hosts[2].wait(for: probe.id, status: .completed)
        let after = try await fleet.hosts[2].download(download.id)
        #expect(after.status == .paused && after.completedLength == stopped.completedLength)
        #expect(fleet.world.server.requests(to: "/slow.bin").count == requestsBefore)

        // Resumed from yet another host: it finishes, byte-exact, from where it stopped.
        let resumed = try await HaulProcess.run(["resume", download.id], in: fleet.home((other + 1) % 3))
        #expect(resumed.status == 0, "\(resumed.stderr)")
        try await fleet.hosts[0].wait(for: download.id, status: .completed)
        #expect(slow.mismatch(inFileAt: fleet.world.directory + "/slow.bin") == nil)
        #expect(fleet.world.server.requests(to: "/slow.bin").last?.range != nil)
        try await fleet.close()
    }

    /// Two live processes under one `--fleet-name` would each take the other's leases as their
    /// own: the second is refused, one line, exit 16. Once the first is gone, the name is free.
    @Test func aSecondLiveHostWithTheSameNameIsRefused() async throws {
        var fleet = try await Fleet.make()
        try await fleet.start(1, [])
        let twin = try await HaulProcess.run(["serve", "--port", "0"] + fleet.arguments(0, []), in: fleet.home(1))
        #expect(twin.status == 16 && twin.stderr.contains("--fleet-name"), "\(twin.stderr)")
        #expect(twin.stderr.split(separator: "\n").count == 1, "\(twin.stderr)")
        await fleet.hosts[0].kill9()
        fleet.hosts[0] = try await fleet.restart(0, [])
        #expect(try await fleet.hosts[0].list().isEmpty)
        try await fleet.close()
    }

    @Test func badStoresGetOneLineAndTheirOwnExitCode() async throws {
        let database = try await PostgresServer.start()
        let world = try await World.make()
        func serve(_ store: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await HaulProcess.run(["serve", "--port", "0", "--store", store], in: world)
        }
        let malformed = try await serve("postgres://nobody@/nowhere")
        #expect(malformed.status == 2 && malformed.stderr.split(separator: "\n").count == 1, "\(malformed.stderr)")
        let login = try await serve(database.urlWithWrongPassword + "?sslmode=disable")
        #expect(
            login.status == 12 && login.stderr.contains("refused the login")
                && !login.stderr.contains("wrong-password"), "\(login.stderr)")
        #expect(login.stderr.split(separator: "\n").count == 1)
        _ = try await database.psql(
            """
            CREATE TABLE haul_schema (version integer NOT NULL); INSERT INTO haul_schema VALUES (7); ALTER TABLE \
            haul_schema OWNER TO haul
            """
        )
        let newer = try await serve(database.url + "?sslmode=disable")
        #expect(newer.status == 13 && newer.stderr.contains("newer"), "\(newer.stderr)")
        #expect(try await database.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'haul_downloads'") == "0")
        await database.destroy()
        let down = try await serve(database.url + "?sslmode=disable")
        #expect(
            down.status == 11 && down.stderr.contains("cannot reach") && down.stderr.split(separator: "\n").count == 1,
            "\(down.stderr)")
        try await world.close()
    }
}
