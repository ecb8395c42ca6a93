import Foundation
import Haul
import HaulCore
import HaulFleet
import HaulTesting
import Testing

/// A pause or remove asked of a download another host holds, when that host never applies it: a
/// real PostgreSQL, a "ghost" host that claimed the download and then never renews (its process
/// hung, its lease of ten minutes live), and host a on a manual clock. a's wait is decided by the
/// queue's `FleetBackend` (10 s on a's clock); before, a's pause reported success after 10 s
/// whatever had happened.
@Suite(.serialized, .timeLimit(.minutes(4))) struct FleetRemoteCommandTests {
    /// The two hosts' fixture (`FleetHostsTests.Hosts`: PostgreSQL, a download directory), with
    /// the ghost's store and the download it claimed.
    struct Ghost {
        let hosts: FleetHostsTests.Hosts
        let ghost: PostgresDownloadStore
        let record: DownloadRecord

        /// The ghost claimed one download and says it runs it.
        static func make() async throws -> Ghost {
            let hosts = try await FleetHostsTests.Hosts.make()
            let ghost = try await hosts.store("ghost", leaseTimeout: .seconds(600))
            var record = DownloadRecord(
                id: .random(),
                request: try DownloadRequest(
                    url: RemoteURL(hosts.server.url("/long.bin")), destination: .directory(hosts.directory)),
                createdAt: 1)
            record.status = .queued
            try await ghost.save([record])
            #expect(try await ghost.claim(limit: 1, excluding: []).map(\.id) == [record.id])
            record.status = .running
            try await ghost.save(record)
            return Ghost(hosts: hosts, ghost: ghost, record: record)
        }

        /// Host a, on `clock`; its store and transport are closed by `close`.
        func host(clock: ManualClock) async throws -> (DownloadManager, PostgresDownloadStore, AsyncHTTPTransport) {
            let store = try await hosts.store("a", leaseTimeout: .seconds(600))
            let configuration = DownloadManager.Configuration(
                stateDirectory: try hosts.stateDirectory("a"), maxConcurrentDownloads: 1)
            let transport = AsyncHTTPTransport(configuration: configuration.http)
            let manager = try await DownloadManager(
                configuration: configuration, fleet: store, transport: transport, clock: ClockAdapter(clock)
            ).runningInATask()
            try await manager.restore()
            return (manager, store, transport)
        }

        func commandStored() async throws -> String {
            try await hosts.database.psql("SELECT coalesce(command, '') FROM haul_downloads WHERE id = '\(record.id)'")
        }

        func close(_ manager: DownloadManager, _ store: PostgresDownloadStore, _ transport: AsyncHTTPTransport)
            async throws
        {
            await manager.shutdown()
            await store.close()
            await transport.shutdown()
            await ghost.close()
            try await hosts.close([])
        }
    }

    /// Runs `call` while the clock moves on a second at a time, each step only once every
    /// sleeper of host a (its fleet loop and the caller's wait) sleeps; returns the error `call`
    /// threw and the seconds the clock moved.
    func refusal(
        on clock: ManualClock, _ call: @escaping @Sendable () async throws -> Void
    ) async -> (HaulError?, Int) {
        await withTaskGroup(of: (HaulError?, Int)?.self) { group in
            group.addTask {
                do {
                    try await call()
                    return (nil, 0)
                } catch {
                    return (error as? HaulError ?? HaulError(.internal, "\(error)"), 0)
                }
            }
            group.addTask {
                var seconds = 0
                while !Task.isCancelled {
                    await clock.waitForSleepers(count: 2)
                    if Task.isCancelled { break }
                    clock.advance(by: .seconds(1))
                    seconds += 1
                }
                return (nil, seconds)
            }
            var error: HaulError?
            var seconds = 0
            for await result in group {
                guard let result else { continue }
                if let thrown = result.0 { error = thrown }
                seconds = max(seconds, result.1)
                group.cancelAll()
            }
            return (error, seconds)
        }
    }

    /// The pause is refused with `conflict` naming the ghost, after 10 s of a's clock and not
    /// before; the download is still the ghost's and still running, and the command stays
    /// stored for the ghost's next renewal.
    @Test func aPauseTheHoldingHostNeverAppliesIsAConflictNamingIt() async throws {
        let fixture = try await Ghost.make()
        let clock = ManualClock()
        let (a, store, transport) = try await fixture.host(clock: clock)
        let id = fixture.record.id
        #expect(await a.fleetRuns([id])[id]?.host == "ghost")
        let (error, seconds) = await refusal(on: clock) { _ = try await a.pause(id) }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(
            error?.message.contains("held by ghost, which has not applied it yet") == true,
            "\(String(describing: error))")
        #expect(seconds >= 10, "refused after \(seconds) s of a's clock")
        #expect(try await a.record(id)?.status == .running)
        #expect(await a.fleetRuns([id])[id]?.host == "ghost")
        #expect(try await fixture.commandStored() == "pause")
        try await fixture.close(a, store, transport)
    }

    /// A remove of the ghost's download is refused the same way, and stays stored.
    @Test func aRemoveTheHoldingHostNeverAppliesIsAConflictNamingIt() async throws {
        let fixture = try await Ghost.make()
        let clock = ManualClock()
        let (a, store, transport) = try await fixture.host(clock: clock)
        let id = fixture.record.id
        let (error, seconds) = await refusal(on: clock) { _ = try await a.remove(id, deleteFile: false) }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(error?.message.contains("held by ghost") == true, "\(String(describing: error))")
        #expect(seconds >= 10)
        #expect(try await a.record(id)?.status == .running)
        #expect(try await fixture.commandStored() == "remove")
        try await fixture.close(a, store, transport)
    }
}
