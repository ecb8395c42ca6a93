import Foundation
import HaulCore
import HaulStore
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// A swift-log handler that keeps every message, for tests to read.
struct LogRecorder: LogHandler {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    let entries = NIOLockedValueBox<[Entry]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    var logger: Logger { Logger(label: "test", factory: { _ in self }) }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        let fields = (metadata ?? [:]).mapValues { "\($0)" }
        entries.withLockedValue { $0.append(Entry(level: level, message: "\(message)", metadata: fields)) }
    }

    func messages(atLeast level: Logger.Level) -> [Entry] {
        entries.withLockedValue { $0.filter { $0.level >= level } }
    }
}

/// Failures that used to be dropped (`try?`) and are now told to the logger the component was given.
@Suite(.timeLimit(.minutes(1))) struct ReportedErrorTests {
    let root: String = {
        let path = NSTemporaryDirectory() + "haul-reported-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// The store logs to the logger it is given, not to one of its own.
    @Test func theStoreLogsToTheInjectedLogger() async throws {
        let recorder = LogRecorder()
        let store = try await SQLiteDownloadStore.open(path: root + "/haul.sqlite", logger: recorder.logger)
        try await store.close()
        let opened = recorder.messages(atLeast: .debug).filter { $0.message == "opened the state database" }
        #expect(opened.count == 1)
        #expect(opened.first?.metadata["path"] == root + "/haul.sqlite")
        #expect(opened.first?.metadata["reads"] == "on their own connection")
    }

    /// The manager hands its configuration's logger to the SQLite store it opens.
    @Test func theManagerPassesItsLoggerToItsStore() async throws {
        let recorder = LogRecorder()
        let manager = try await DownloadManager(
            configuration: .init(stateDirectory: root + "/state", logger: recorder.logger))
        await manager.shutdown()
        #expect(recorder.messages(atLeast: .debug).contains { $0.message == "opened the state database" })
        // A new state directory is made private (and a failing chmod would have thrown).
        let mode = try FileManager.default.attributesOfItem(atPath: root + "/state")[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    /// A remove another host asked for, which no caller waits on, is logged when it fails; one
    /// for a download already gone is what was asked and logs nothing.
    @Test func aFailedRemoteRemoveIsLogged() async throws {
        let recorder = LogRecorder()
        let store = try await SQLiteDownloadStore.open(path: root + "/haul.sqlite")
        let request = try DownloadRequest(url: RemoteURL("http://127.0.0.1:1/a.bin"), destination: .directory(root))
        var record = DownloadRecord(id: .random(), request: request, createdAt: 1)
        record.status = .paused
        try await store.save(record)
        let configuration = DownloadManager.Configuration(stateDirectory: root + "/state", logger: recorder.logger)
        let transport = AsyncHTTPTransport(configuration: configuration.http)
        let manager = try await DownloadManager(
            configuration: configuration, store: store, transport: transport,
            clock: ClockAdapter(ContinuousClock())
        ).started()

        await manager.removeForAnotherHost(.random(), deleteFile: false)
        #expect(recorder.messages(atLeast: .warning).isEmpty)

        try await store.close()
        await manager.removeForAnotherHost(record.id, deleteFile: false)
        let failures = recorder.messages(atLeast: .error).filter { $0.message == "cannot apply another host's remove" }
        #expect(failures.count == 1)
        #expect(failures.first?.metadata["id"] == record.id.rawValue)
        #expect(failures.first?.metadata["error"]?.isEmpty == false)
        await manager.shutdown()
        await transport.shutdown()
    }
}
