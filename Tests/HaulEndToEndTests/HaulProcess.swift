import Crypto
import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// The built `haul` binary, run as a user would: its own process, its own `HAUL_HOME`.
final class HaulProcess: @unchecked Sendable {
    /// `$HAUL_BIN`, else the `haul` next to this test bundle (SwiftPM builds it because this
    /// target depends on it).
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["HAUL_BIN"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidate = bundle.appendingPathComponent("haul").path
        if !FileManager.default.isExecutableFile(atPath: candidate) {
            // On Linux the bundle is the .xctest executable itself; on macOS it's a directory.
            candidate = bundle.deletingLastPathComponent().appendingPathComponent("haul").path
        }
        return candidate
    }()

    let process = Process()
    let stdoutPath: String
    let stderrPath: String
    private let exited = AsyncStream<Int32>.makeStream()

    init(
        _ arguments: [String], home: String, workingDirectory: String, shell: String? = nil,
        environment extra: [String: String] = [:]
    ) throws {
        let id = UUID().uuidString
        stdoutPath = NSTemporaryDirectory() + "haul-out-\(id)"
        stderrPath = NSTemporaryDirectory() + "haul-err-\(id)"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        if let shell {
            // For limits only a shell can set (ulimit -f): `exec` keeps the pid haul's.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", shell + "; exec \"$0\" \"$@\"", Self.binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_HOME"] = home
        // The test's own configuration directory, empty unless a test writes a file there: a
        // configuration file of the user running the tests never applies.
        environment["XDG_CONFIG_HOME"] = home + "-config"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        let continuation = exited.continuation
        process.terminationHandler = { process in
            continuation.yield(process.terminationStatus)
            continuation.finish()
        }
        try process.run()
    }

    /// The output files go with the process: the suite used to leave two files in the
    /// temporary directory per run of the binary (thousands per suite run). A file that cannot
    /// be removed loses nothing a test needs.
    deinit {
        try? FileManager.default.removeItem(atPath: stdoutPath)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    /// Waits for the exit status (the signal number when killed by one).
    func wait() async -> Int32 {
        for await status in exited.stream { return status }
        // The waiting task was cancelled (a test's time limit): stop the program, not read the
        // status of one still running (Foundation traps on that, and takes every test with it).
        signal(SIGKILL)
        process.waitUntilExit()
        return process.terminationStatus
    }

    func signal(_ number: Int32) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, number)
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Runs to the end.
    static func run(
        _ arguments: [String], in world: World, shell: String? = nil,
        environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = try HaulProcess(
            arguments, home: world.home, workingDirectory: world.directory, shell: shell,
            environment: environment)
        let status = await process.wait()
        return (status, process.stdout, process.stderr)
    }
}

/// A test's world: server, download directory, `HAUL_HOME`.
struct World {
    let server: TestServer
    let directory: String
    let home: String

    static func make(tls: TLSFiles? = nil) async throws -> World {
        let root = NSTemporaryDirectory() + "haul-e2e-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/downloads", withIntermediateDirectories: true)
        return World(server: try await TestServer.start(tls: tls), directory: root + "/downloads", home: root + "/home")
    }

    func close() async throws {
        try await server.shutdown()
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    /// The stored record of the only download, read the way a second process would.
    func storedRecord() async throws -> DownloadRecord? {
        let path = home + "/haul.sqlite"
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let store = try await SQLiteDownloadStore.open(path: path)
        defer { Task { try? await store.close() } }
        return try await store.records(status: nil).first
    }

    /// Every stored record, read the way a second process would.
    func storedRecords() async throws -> [DownloadRecord] {
        let store = try await SQLiteDownloadStore.open(path: home + "/haul.sqlite")
        defer { Task { try? await store.close() } }
        return try await store.records(status: nil)
    }

    /// Polls the store until the checkpoint passes `offset`; bounded so a broken build fails
    /// instead of hanging. Not a timing assertion: only the state is checked.
    func waitForCheckpoint(beyond offset: Int64) async throws -> Int64 {
        for _ in 0..<2400 {
            if let record = try? await storedRecord(), record.completedLength > offset { return record.completedLength }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("no checkpoint beyond \(offset)")
        return offset
    }

    func sha256(of path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }
}

extension RecordedRequest {
    /// The first byte asked for, 0 when no Range was sent.
    var rangeStart: Int64 {
        guard let range, range.hasPrefix("bytes=") else { return 0 }
        return Int64(range.dropFirst(6).prefix { $0 != "-" }) ?? -1
    }
}
