import Haul
import HaulCore
import HaulFleet
import HaulTesting
import Logging
import ServiceLifecycle
import Testing

/// The daemon's fleet store is one of its services: its pool runs in the service group, not in
/// a task of its own, and stops with the group.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FleetPoolServiceTests {
    @Test func aStoreRunByAServiceGroupQueriesOnlyWhileTheGroupRunsIt() async throws {
        let server = try await PostgresServer.start()
        let location = try PostgresLocation(parsing: server.url + "?sslmode=disable")
        // Opening checks the login and migrates the schema without any pool. A 15 s lease gives
        // each query 5 s: with 1 s (a 3 s lease) the first save under the group, which makes the
        // pool's first connection, ran out of time on a CI machine busy with the other suites.
        let store = try await PostgresDownloadStore.open(
            location, host: "grouped", leaseTimeout: .seconds(15), runsItsPool: false)
        let record = DownloadRecord(
            id: .random(),
            request: try DownloadRequest(
                url: RemoteURL("http://127.0.0.1:9/f"),
                destination: .directory("/tmp/pool")), createdAt: 1)
        // Nothing runs its pool yet: a query waits out its time limit.
        let waited = await #expect(throws: HaulError.self) { try await store.save(record) }
        #expect(waited?.code == .storeUnavailable)

        let group = ServiceGroup(services: [store], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await store.save(record)
            #expect(try await store.record(record.id)?.id == record.id)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await store.close()
    }
}
