import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

/// One test's world: the fault-injecting server on 127.0.0.1, a fresh destination directory,
/// and a real `DownloadManager` on a real SQLite store. Retries are quick (10 ms base) and
/// checkpoints frequent so tests need no long waits; nothing asserts on time.
final class Harness: Sendable {
    let server: TestServer
    let directory: String
    let stateDirectory: String
    let manager: DownloadManager
    let transport: AsyncHTTPTransport
    let store: SQLiteDownloadStore
    let configuration: DownloadManager.Configuration

    static func make(
        maxConcurrent: Int = 3,
        maxAttempts: Int = 5,
        readTimeout: Duration? = nil,
        connectTimeout: Duration? = nil,
        clock: (any HaulClock)? = nil,
        tls: TLSFiles? = nil,
        checkpointInterval: Duration = .milliseconds(20),
        minimumSegmentSize: Int64 = 1 << 20,
        confined: Bool = false,
        bootID: String? = nil,
        maxConnectionsPerHost: Int? = nil,
        fileCalls: FileCalls = .system,
        refreshCommand: String? = nil,
        runs: Bool = true,
        sendsPastLimit: Bool = false
    ) async throws -> Harness {
        let root = NSTemporaryDirectory() + "haul-test-\(UUID().uuidString)"
        let directory = root + "/downloads"
        let stateDirectory = root + "/state"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let server = try await TestServer.start(tls: tls)
        let store = try await SQLiteDownloadStore.open(path: stateDirectory + "/haul.sqlite")
        var configuration = DownloadManager.Configuration(
            stateDirectory: stateDirectory, maxConcurrentDownloads: maxConcurrent,
            checkpointInterval: checkpointInterval, progressInterval: .milliseconds(20),
            retry: RetryPolicy(maxAttempts: maxAttempts, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50)),
            http: .init(
                connectTimeout: connectTimeout ?? transportTimeouts(clock).connect,
                readTimeout: readTimeout ?? transportTimeouts(clock).read,
                additionalTrustRoots: tls.map { [$0.certificatePath] } ?? []),
            minimumSegmentSize: minimumSegmentSize, downloadRoots: confined ? [directory] : nil, bootID: bootID,
            maxConnectionsPerHost: maxConnectionsPerHost)
        configuration.fileCalls = fileCalls
        configuration.refreshCommand = refreshCommand
        configuration.sendsPastLimit = sendsPastLimit
        let transport = AsyncHTTPTransport(configuration: configuration.http)
        let manager = DownloadManager(
            configuration: configuration, store: store, transport: transport,
            clock: clock ?? ClockAdapter(ContinuousClock()))
        if runs { try await manager.started() }
        return Harness(
            server: server, directory: directory, stateDirectory: stateDirectory, manager: manager,
            transport: transport, store: store, configuration: configuration)
    }

    /// The transport's timeouts unless a test names its own: 5 s to connect and 10 s without a
    /// byte on the real clock. With an injected (manual) clock they are the one wall-clock wait
    /// left in the engine, and a timeout's retry waits on a clock only the test advances: a
    /// connect that took longer than 5 s while every test ran at once on two cores left
    /// `anHTTPDateRetryAfterWaitsByTheInjectedClock` waiting for a retry until its time limit.
    /// They are then longer than any suite's time limit, which is the hang guard.
    static func transportTimeouts(_ clock: (any HaulClock)?) -> (connect: Duration, read: Duration) {
        clock == nil ? (.seconds(5), .seconds(10)) : (.seconds(600), .seconds(600))
    }

    private init(
        server: TestServer, directory: String, stateDirectory: String, manager: DownloadManager,
        transport: AsyncHTTPTransport, store: SQLiteDownloadStore, configuration: DownloadManager.Configuration
    ) {
        self.configuration = configuration
        self.server = server
        self.directory = directory
        self.stateDirectory = stateDirectory
        self.manager = manager
        self.transport = transport
        self.store = store
    }

    /// A second manager on the same store and files: the process after a restart (after a
    /// reboot too, given another boot id).
    func restartedManager(bootID: String? = nil) async throws -> DownloadManager {
        var configuration = configuration
        if let bootID { configuration.bootID = bootID }
        return try await DownloadManager(
            configuration: configuration, store: store, transport: transport, clock: ClockAdapter(ContinuousClock())
        ).started()
    }

    func close() async throws {
        await manager.shutdown()
        await transport.shutdown()
        try await store.close()
        try await server.shutdown()
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    func request(
        _ path: String, output: String? = nil, range: ByteRange? = nil, checksum: Checksum? = nil,
        directory: String? = nil, priority: Int = 0, connections: Int = 1
    ) throws -> DownloadRequest {
        let destination: DownloadRequest.Destination =
            output.map { .file((directory ?? self.directory) + "/" + $0) }
            ?? .directory(directory ?? self.directory)
        return try DownloadRequest(
            url: RemoteURL(server.url(path)), destination: destination, range: range, checksum: checksum,
            priority: priority, connections: connections)
    }

    struct Outcome {
        var record: DownloadRecord
        var events: [DownloadEvent.Kind]
        var final: DownloadEvent.Kind { events.last! }
        var path: String? { record.fileName.map { record.request.directory + "/" + $0 } }

        var restarted: Bool {
            events.contains { if case .restarted = $0 { true } else { false } }
        }
    }

    /// Adds the request and waits for its final event.
    func download(_ request: DownloadRequest) async throws -> Outcome {
        let events = manager.events()
        let record = try await manager.add(request)
        return try await waitForEnd(of: record.id, in: events)
    }

    /// The end comes from the manager's outcome, which is never lost; the events are those the
    /// stream told up to the final one. The final event is published before the outcome, and the
    /// stream drops only its oldest events, so once the outcome is here the final event is
    /// buffered and the collector ends.
    func waitForEnd(of id: DownloadID, in events: AsyncStream<DownloadEvent>) async throws -> Outcome {
        let collector = Task {
            var kinds: [DownloadEvent.Kind] = []
            for await event in events where event.id == id {
                kinds.append(event.kind)
                if event.isFinal { break }
            }
            return kinds
        }
        let ended = try await manager.outcome(of: id)
        let kinds = await collector.value
        #expect(kinds.last.map { DownloadEvent(id: id, kind: $0).isFinal } == true, "the final event of \(id)")
        let record = try #require(try await manager.record(id))
        #expect(record.status == ended.status || ended.record == nil)
        return Outcome(record: record, events: kinds)
    }

    /// Returns once a progress event reports more than `bytes` for the download.
    func waitForProgress(of id: DownloadID, beyond bytes: Int64, in events: AsyncStream<DownloadEvent>) async {
        for await event in events where event.id == id {
            if case .progress(let progress) = event.kind, progress.completed > bytes { return }
        }
    }

    /// Names of everything in the destination directory.
    func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }
}

/// A throwing wrapper so tests can use `defer`-like cleanup with async work.
func withHarness(
    maxConcurrent: Int = 3, maxAttempts: Int = 5, readTimeout: Duration? = nil,
    connectTimeout: Duration? = nil, clock: (any HaulClock)? = nil, tls: TLSFiles? = nil,
    checkpointInterval: Duration = .milliseconds(20), minimumSegmentSize: Int64 = 1 << 20, confined: Bool = false,
    bootID: String? = nil, maxConnectionsPerHost: Int? = nil, fileCalls: FileCalls = .system,
    refreshCommand: String? = nil, runs: Bool = true, sendsPastLimit: Bool = false,
    _ body: (Harness) async throws -> Void
) async throws {
    let harness = try await Harness.make(
        maxConcurrent: maxConcurrent, maxAttempts: maxAttempts, readTimeout: readTimeout,
        connectTimeout: connectTimeout, clock: clock, tls: tls,
        checkpointInterval: checkpointInterval, minimumSegmentSize: minimumSegmentSize,
        confined: confined, bootID: bootID, maxConnectionsPerHost: maxConnectionsPerHost,
        fileCalls: fileCalls, refreshCommand: refreshCommand, runs: runs, sendsPastLimit: sendsPastLimit)
    do {
        try await body(harness)
    } catch {
        try? await harness.close()
        throw error
    }
    try await harness.close()
}

extension DownloadEvent.Kind {
    var isCompleted: Bool { if case .completed = self { true } else { false } }

    var failure: HaulError? { if case .failed(let error) = self { error } else { nil } }
}

extension DownloadManager {
    /// Runs the manager in a task of the test's own, as a service group would; `shutdown()`
    /// ends it. Operations may be called as soon as this returns.
    @discardableResult
    func started() async throws -> DownloadManager {
        try prepareToRun()
        Task { await run() }
        return self
    }

    /// Returns once `condition` holds of what waits in the manager's inbox (checked at each of
    /// its changes, no poll); false if the test's time limit came first.
    func inboxHolds(_ condition: @escaping @Sendable (DownloadManager) -> Bool) async -> Bool {
        let waiters = Waiters()
        observeInbox { waiters.changed() }
        return await waiters.wait { condition(self) }
    }
}
