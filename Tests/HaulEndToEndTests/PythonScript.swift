import Foundation

/// Runs a Python script of the test suite (the web page's Selenium test, the aria2 JSON-RPC
/// comparison) and returns its exit status with stdout and stderr together.
enum PythonScript {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Killed after `limit`: the scripts bound their own waits, so this only catches a wedged one.
    static func run(python: String, _ arguments: [String], limit: Duration = .seconds(600)) async throws -> (
        status: Int32, output: String
    ) {
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
