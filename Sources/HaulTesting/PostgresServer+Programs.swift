import Foundation

// The programs the tests' PostgreSQL is made and driven with (initdb, pg_ctl, psql), run to
// their end as the server's user when the tests run as root.

extension PostgresServer {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Both streams, for error messages.
        var text: String { [stdout, stderr].filter { !$0.isEmpty }.joined(separator: "\n") }
    }

    /// Runs a program to its end, as `user` (through runuser) when given. Its output goes to
    /// files rather than pipes: nothing to drain, whatever the program prints.
    @discardableResult
    static func run(
        _ executable: String, _ arguments: [String], as user: String?, in directory: String,
        check: Bool = true
    ) async throws -> Output {
        let process = try makeProcess(executable, arguments, as: user, in: directory)

        let base = directory + "/.run-\(UUID().uuidString)"
        let stdoutPath = base + ".out"
        let stderrPath = base + ".err"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: stdoutPath)
            try? FileManager.default.removeItem(atPath: stderrPath)
        }
        let stdoutHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let stderrHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardOutput = stdoutHandle
        process.standardError = stderrHandle
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                process.terminationHandler = { _ in continuation.resume() }
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } catch {
            try? stdoutHandle.close()
            try? stderrHandle.close()
            throw error
        }
        try? stdoutHandle.close()
        try? stderrHandle.close()
        let output = Output(
            status: process.terminationStatus,
            stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        )
        if check, output.status != 0 {
            let name = URL(fileURLWithPath: executable).lastPathComponent
            throw PostgresServerError.commandFailed(command: name, status: output.status, output: output.text)
        }
        return output
    }

    /// A Process for `executable`, through `runuser -u user` when given, in `directory` (one the
    /// server's user can enter; it may not be allowed into the tests' own), without `PG*`
    /// variables from the environment, so a developer's PGHOST or PGPASSWORD cannot redirect it.
    static func makeProcess(
        _ executable: String, _ arguments: [String], as user: String?,
        in directory: String
    ) throws -> Process {
        let process = Process()
        if let user {
            let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
                .first { FileManager.default.isExecutableFile(atPath: $0) }
            guard let runuser else { throw PostgresServerError.noRunuser }
            process.executableURL = URL(fileURLWithPath: runuser)
            process.arguments = ["-u", user, "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGCONNECT_TIMEOUT"] = "10"
        // No stored passwords: a client logs in with what its URL says, or not at all.
        environment["PGPASSFILE"] = "/dev/null"
        environment["LC_ALL"] = "C"
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = FileHandle.nullDevice
        return process
    }
}
