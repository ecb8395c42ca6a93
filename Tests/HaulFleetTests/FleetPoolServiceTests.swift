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
        // Opening checks the login and migrates the schema without any pool.
        let store = try await PostgresDownloadStore.open(
            location, host: "grouped", leaseTimeout: .seconds(3), runsItsPool: false)
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
