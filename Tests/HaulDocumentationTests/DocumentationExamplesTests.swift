import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import NIOConcurrencyHelpers
import Testing

/// The examples of README.md and the DocC articles (`Examples/`), run against a real HTTP
/// server: each does what its text says it does.
@Suite(.timeLimit(.minutes(2))) struct DocumentationExamplesTests {
    /// A fresh directory for one test.
    static func scratch(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "haul-docs-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Waits until download `id` has some bytes in, from the manager's live figures (not its
    /// event stream, which may drop events under load); bounded, and then the test fails.
    static func firstProgress(of id: DownloadID, on manager: DownloadManager) async throws {
        for _ in 0..<2400 {
            if let progress = manager.liveProgress(id), progress.completed > 0 { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("download \(id) never showed progress")
    }

    @Test func readmesExampleDownloadsTheFile() async throws {
        let server = try await TestServer.start()
        let payload = Payload(seed: 1, length: 3 << 20)
        server.setRoute("/big.iso", Route(payload: payload))
        let directory = try Self.scratch("readme")
        let outcome = try await downloadOnce(
            server.url("/big.iso"), into: directory + "/data", stateDirectory: directory + "/state")
        #expect(outcome.status == .completed)
        #expect(payload.mismatch(inFileAt: directory + "/data/big.iso") == nil)
        try await server.shutdown()
    }

    @Test func gettingStartedDownloadsShowsProgressAndNeverFetchesAFinishedFileTwice() async throws {
        let server = try await TestServer.start()
        let payload = Payload(seed: 2, length: 4 << 20)
        server.setRoute("/model.bin", Route(payload: payload))
        let directory = try Self.scratch("start")
        let url = server.url("/model.bin")
        let outcome = try await downloadWithProgress(url, into: directory + "/data", state: directory + "/state")
        #expect(outcome.status == .completed)
        #expect(payload.mismatch(inFileAt: directory + "/data/model.bin") == nil)
        let requests = server.requests(to: "/model.bin").count
        #expect(try await fetchAgain(url, into: directory + "/data", state: directory + "/state"))
        #expect(server.requests(to: "/model.bin").count == requests, "a finished file is not fetched again")

        let line = progressLine(Progress(completed: 1 << 20, total: 4 << 20, bytesPerSecond: Double(2 << 20)))
        #expect(line.hasPrefix("[#####---------------] 25%  2.0 MiB/s"))
        try await server.shutdown()
    }

    /// A download of 2 MiB served at 1 MiB/s, running, with some bytes in.
    struct Midway {
        var server: TestServer
        var payload: Payload
        var directory: String
        var manager: DownloadManager
        var record: DownloadRecord

        static func start(_ name: String, seed: UInt64) async throws -> Midway {
            let server = try await TestServer.start()
            let payload = Payload(seed: seed, length: 2 << 20)
            server.setRoute("/\(name).bin", Route(payload: payload, throttle: 1 << 20))
            let directory = try DocumentationExamplesTests.scratch(name)
            let manager = try await DownloadManager(configuration: .init(stateDirectory: directory + "/state"))
                .runningInATask()
            let record = try await manager.add(
                DownloadRequest(url: try RemoteURL(server.url("/\(name).bin")), destination: .directory(directory)))
            try await DocumentationExamplesTests.firstProgress(of: record.id, on: manager)
            return Midway(server: server, payload: payload, directory: directory, manager: manager, record: record)
        }

        /// The file is the payload, and a request asked for the rest only.
        func expectResumedWithARange(_ name: String) {
            #expect(payload.mismatch(inFileAt: directory + "/\(name).bin") == nil)
            let ranges = server.requests(to: "/\(name).bin").compactMap(\.range)
            #expect(ranges.contains { !$0.hasPrefix("bytes=0-") }, "resumed from where it stopped")
        }
    }

    @Test func gettingStartedPausesAndResumesWithARange() async throws {
        let midway = try await Midway.start("p", seed: 3)
        let outcome = try await pauseThenResume(midway.record.id, on: midway.manager)
        await midway.manager.shutdown()
        #expect(outcome.status == .completed)
        midway.expectResumedWithARange("p")
        try await midway.server.shutdown()
    }

    @Test func gettingStartedResumesAfterARestartFromTheCheckpoint() async throws {
        let midway = try await Midway.start("r", seed: 4)
        await midway.manager.shutdown() // the app quits mid-download

        let outcomes = try await resumeAfterRestart(state: midway.directory + "/state")
        #expect(outcomes.map(\.id) == [midway.record.id])
        #expect(outcomes.first?.status == .completed)
        midway.expectResumedWithARange("r")
        try await midway.server.shutdown()
    }

    @Test func manyDownloadsEndWithOneOutcomeEach() async throws {
        let server = try await TestServer.start()
        var payloads: [String: Payload] = [:]
        for index in 0..<6 {
            let payload = Payload(seed: UInt64(10 + index), length: 300_000)
            server.setRoute("/f\(index).bin", Route(payload: payload))
            payloads[server.url("/f\(index).bin")] = payload
        }
        let directory = try Self.scratch("many")
        let outcomes = try await downloadAll(Array(payloads.keys), into: directory, state: directory + "/state")
        #expect(outcomes.count == 6)
        #expect(outcomes.values.allSatisfy { $0.status == .completed })
        for index in 0..<6 {
            #expect(payloads[server.url("/f\(index).bin")]?.mismatch(inFileAt: directory + "/f\(index).bin") == nil)
        }
        #expect(server.peakConcurrentResponses() <= 2, "two at a time")
        try await server.shutdown()
    }

    @Test func steeringAQueueMovesPausesAndResumes() async throws {
        let server = try await TestServer.start()
        let directory = try Self.scratch("steer")
        let manager = try await DownloadManager(
            configuration: .init(stateDirectory: directory + "/state", maxConcurrentDownloads: 1)
        ).runningInATask()
        var requests: [DownloadRequest] = []
        for index in 0..<3 {
            server.setRoute("/s\(index).bin", Route(payload: Payload(seed: UInt64(20 + index), length: 200_000)))
            requests.append(
                try DownloadRequest(
                    url: try RemoteURL(server.url("/s\(index).bin")), destination: .directory(directory)))
        }
        let outcomes = manager.outcomes()
        let records = try await manager.add(requests)
        try await steer(manager, urgent: records[2].id)
        #expect(await manager.maxConcurrentDownloads == 4)
        var completed: Set<DownloadID> = []
        for await outcome in outcomes where outcome.status == .completed {
            completed.insert(outcome.id)
            if completed.count == 3 { break }
        }
        #expect(completed == Set(records.map(\.id)))
        await manager.shutdown()
        try await server.shutdown()
    }

    @Test func aCustomStoreHearsEverySave() async throws {
        let server = try await TestServer.start()
        let payload = Payload(seed: 5, length: 500_000)
        server.setRoute("/c.bin", Route(payload: payload))
        let directory = try Self.scratch("store")
        let seen = NIOLockedValueBox<[DownloadStatus]>([])
        let status = try await withManagerTellingTheApp(state: directory + "/state") { record in
            seen.withLockedValue { $0.append(record.status) }
        } _: { manager in
            let record = try await manager.add(
                DownloadRequest(url: try RemoteURL(server.url("/c.bin")), destination: .directory(directory)))
            return try await manager.outcome(of: record.id).status
        }
        #expect(status == .completed)
        #expect(seen.withLockedValue { $0.first } == .queued)
        #expect(seen.withLockedValue { $0.last } == .completed)
        #expect(payload.mismatch(inFileAt: directory + "/c.bin") == nil)
        try await server.shutdown()
    }

    @Test func aCustomTransportSignsEveryRequest() async throws {
        let server = try await TestServer.start()
        let payload = Payload(seed: 6, length: 500_000)
        server.setRoute("/t.bin", Route(payload: payload))
        let directory = try Self.scratch("transport")
        let outcome = try await downloadSigned(
            server.url("/t.bin"), into: directory, state: directory + "/state", token: { "t0k3n" })
        #expect(outcome.status == .completed)
        let headers = server.requests(to: "/t.bin").map { $0.header("Authorization") }
        #expect(!headers.isEmpty && headers.allSatisfy { $0 == "Bearer t0k3n" })
        try await server.shutdown()
    }
}

extension DownloadManager {
    /// Runs the manager in a task of the test's own (the app's, in the articles' words);
    /// `shutdown()` ends it.
    func runningInATask() async throws -> DownloadManager {
        try await prepareToRun()
        Task { await run() }
        return self
    }
}
