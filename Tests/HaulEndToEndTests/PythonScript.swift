import Foundation

/// Runs a Python script of the test suite (the web page's Selenium test, the aria2 JSON-RPC
/// comparison) and returns its exit status with stdout and stderr together.
enum PythonScript {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Killed after `limit`: the scripts bound their own waits, so this only catches a wedged one.
    static func run(
        python: String, _ arguments: [String], environment extra: [String: String] = [:],
        limit: Duration = .seconds(600)
    ) async throws -> (status: Int32, output: String) {
        let outputPath = NSTemporaryDirectory() + "haul-python-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = ContinuousClock.now + limit
        var note = ""
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                process.waitUntilExit()
                note = "\n(killed: still running after \(limit))"
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text + note)
    }
}

/// A Python program that serves something for a suite (moto's S3, a registry, the Hub) until its
/// standard input closes (when the test process ends), and says it is ready with one JSON line
/// on its standard output.
struct PythonFixture: @unchecked Sendable {
    let process: Process
    let input: Pipe

    /// Starts `script` (beneath the package) with `python`; returns the fixture and its first
    /// line, decoded as `Ready`.
    static func start<Ready: Decodable>(
        python: String, script: String, as: Ready.Type, environment: [String: String] = [:]
    ) async throws -> (PythonFixture, Ready) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [PythonScript.packageRoot + "/" + script]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line, once it is ready (bounded by the suite's time limit).
        let line = try await Task.detached {
            var bytes: [UInt8] = []
            while true {
                let chunk = output.fileHandleForReading.readData(ofLength: 1)
                guard let byte = chunk.first, byte != UInt8(ascii: "\n") else { break }
                bytes.append(byte)
            }
            return bytes
        }.value
        return (PythonFixture(process: process, input: input), try JSONDecoder().decode(Ready.self, from: Data(line)))
    }
}
