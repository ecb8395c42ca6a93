import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real PostgreSQL server for tests: Debian's `postgresql` package, in a fresh temporary
/// data directory, on a free 127.0.0.1 port, with a `haul` role (password `haul-secret`) that
/// owns a `haul` database. Tests start and destroy their own, so they never depend on (or
/// disturb) a server the machine happens to run.
///
/// ```swift
/// let server = try await PostgresServer.start()
/// // ... connect to server.url; pause() and resume() to take it away and bring it back
/// await server.destroy()
/// ```
///
/// PostgreSQL refuses to run as root, so as root its programs run as the `postgres` system user
/// (which the Debian package creates) through `runuser`, and the temporary directory belongs to
/// that user. `psql` needs no such care: as a client it runs as whoever runs the tests.
///
/// The postmaster runs in the foreground as a child `Process`, not daemonized by `pg_ctl start`:
/// on Linux, Foundation reports a child's exit only once every process that inherited its
/// internal socket has closed it, so a `pg_ctl start` whose server inherited it would never be
/// seen to end. `pg_ctl stop` (which starts nothing) still does the stopping.
public final class PostgresServer: Sendable {
    /// The newest installed PostgreSQL's programs (`/usr/lib/postgresql/<version>/bin`), looked
    /// up on every call since Debian installs them per major version. Tests that run a client
    /// themselves (`psql` with a URL) find it here.
    public static var binDirectory: String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        func key(_ version: String) -> [Int] { version.split(separator: ".").map { Int($0) ?? -1 } }
        return
            versions
            .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .max { key($0).lexicographicallyPrecedes(key($1)) }
            .map { "\(root)/\($0)/bin" }
    }

    /// Whether PostgreSQL's programs are installed (`.ci/run` installs Debian's package). Tests
    /// should not skip themselves on false: `start()` then fails with a message saying what to
    /// install, so a machine without PostgreSQL cannot pass silently.
    public static var isInstalled: Bool { binDirectory != nil }

    /// The TCP port on 127.0.0.1; the same after `resume()`, so URLs handed out stay valid.
    public let port: Int
    /// The temporary directory: `data/`, the server log and the Unix socket. Gone after `destroy()`.
    public let directory: String
    /// `postgres://haul:haul-secret@127.0.0.1:PORT/haul`, the URL the code under test connects with.
    public var url: String { "postgres://\(Self.role):\(Self.password)@127.0.0.1:\(port)/\(Self.database)" }
    /// The same URL with a wrong password, which the server refuses (TCP logins use
    /// scram-sha-256), to test how callers report failed authentication.
    public var urlWithWrongPassword: String {
        "postgres://\(Self.role):wrong-password@127.0.0.1:\(port)/\(Self.database)"
    }
    /// The server's log, for assertions and failure messages.
    public var logPath: String { directory + "/server.log" }

    static let role = "haul"
    static let password = "haul-secret"
    static let database = "haul"
    /// initdb's bootstrap superuser, whatever the OS user is, so `psql` always logs in as the same name.
    static let superuser = "postgres"

    private let bin: String
    /// The OS user the server's programs run as; nil runs them as the current user.
    private let serverUser: String?
    private let state = NIOLockedValueBox(State())

    private struct State {
        var destroyed = false
        /// The running (or last) postmaster; nil before the first start and after a pause.
        var postmaster: Postmaster?
    }

    private var dataDirectory: String { directory + "/data" }

    private init(port: Int, directory: String, bin: String, serverUser: String?) {
        self.port = port
        self.directory = directory
        self.bin = bin
        self.serverUser = serverUser
    }

    /// A fallback for a test that forgets `destroy()`: signals the server to stop at once and
    /// removes the directory, without waiting (deinit cannot await).
    deinit {
        guard !state.withLockedValue({ $0.destroyed }) else { return }
        Self.signalPostmaster(dataDirectory: directory + "/data")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Creates a cluster with initdb in a new temporary directory, starts it on a free port and
    /// creates the `haul` role and database. Returns once the server accepts connections; throws
    /// (with the tail of the server log) if it does not within 30 s. TCP connections are allowed
    /// only from 127.0.0.1 with a password (scram-sha-256), so a wrong password is refused; the
    /// superuser `postgres` logs in over the Unix socket in `directory` without one.
    public static func start() async throws -> PostgresServer {
        guard let bin = binDirectory else { throw PostgresServerError.notInstalled }
        var serverUser: String?
        var owner: (uid: uid_t, gid: gid_t)?
        if geteuid() == 0 {
            guard let entry = getpwnam(superuser) else { throw PostgresServerError.noPostgresUser }
            serverUser = superuser
            owner = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        // Short: the socket's path (directory + "/.s.PGSQL.PORT") must fit in 107 bytes.
        let directory = NSTemporaryDirectory() + "haul-pg-" + UUID().uuidString.prefix(12).lowercased()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let owner { chown(directory, owner.uid, owner.gid) }

        var server: PostgresServer?
        do {
            let data = directory + "/data"
            // --no-sync: initdb's own fsyncs only slow tests down; the server keeps fsync on.
            _ = try await run(
                bin + "/initdb",
                [
                    "-D", data, "-U", superuser, "--auth-local=trust", "--auth-host=scram-sha-256",
                    "--encoding=UTF8", "--locale=C", "--no-sync",
                ], as: serverUser, in: directory)
            // Only these two ways in: the superuser over the socket, anyone with a password over TCP.
            try write(
                """
                local all \(superuser) trust
                host all all 127.0.0.1/32 scram-sha-256

                """, to: data + "/pg_hba.conf", owner: owner)
            try append("\ninclude 'haul.conf'\n", to: data + "/postgresql.conf")

            // Three tries in case another process takes the port between choosing and binding it.
            var lastError: (any Error)?
            for _ in 0..<3 {
                let port = try LoopbackPort.free()
                try write(
                    """
                    # Written by HaulTesting's PostgresServer.
                    listen_addresses = '127.0.0.1'
                    port = \(port)
                    unix_socket_directories = '\(directory)'
                    password_encryption = 'scram-sha-256'

                    """, to: data + "/haul.conf", owner: owner)
                let candidate = PostgresServer(port: port, directory: directory, bin: bin, serverUser: serverUser)
                do {
                    try await candidate.startServer()
                    server = candidate
                    break
                } catch {
                    lastError = error
                    // Keep the directory for the next try; deinit would remove it.
                    candidate.state.withLockedValue { $0.destroyed = true }
                    let log = (try? String(contentsOfFile: candidate.logPath, encoding: .utf8)) ?? ""
                    guard log.contains("could not bind") || log.contains("Address already in use") else { throw error }
                    try? FileManager.default.removeItem(atPath: candidate.logPath)
                }
            }
            guard let server else { throw lastError ?? PostgresServerError.noPort }
            _ = try await server.psql(
                """
                CREATE ROLE \(role) LOGIN PASSWORD '\(password)';
                CREATE DATABASE \(database) OWNER \(role);
                """, database: "postgres")
            return server
        } catch {
            if let server {
                await server.destroy()
            } else {
                signalPostmaster(dataDirectory: directory + "/data")
                try? FileManager.default.removeItem(atPath: directory)
            }
            throw error
        }
    }

    /// Stops the server (`pg_ctl stop -m fast`), keeping the data directory, so tests can take
    /// the database away from the code under test and `resume()` it on the same port.
    public func pause() async throws {
        try checkNotDestroyed()
        let output = try await Self.run(
            bin + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-t", "30", "stop"],
            as: serverUser, in: directory, check: false)
        guard output.status == 0 else {
            throw PostgresServerError.commandFailed(
                command: "pg_ctl stop", status: output.status,
                output: output.text + "\n" + logTail())
        }
        // pg_ctl returns when the pid file is gone; the port is closed once the process has ended.
        let postmaster = state.withLockedValue { state in
            defer { state.postmaster = nil }
            return state.postmaster
        }
        if let postmaster, !(await postmaster.waitForExit(timeout: .seconds(10))) {
            throw PostgresServerError.commandFailed(
                command: "pg_ctl stop", status: 0,
                output: "postgres still running 10 s after pg_ctl stop\n" + logTail())
        }
    }

    /// Starts the paused server again with its data, on the same port; returns once it accepts
    /// connections (throws with the log's tail if it does not within 30 s, for example because
    /// another process took the port meanwhile). Does nothing if it is running.
    public func resume() async throws {
        try checkNotDestroyed()
        if let postmaster = state.withLockedValue({ $0.postmaster }), postmaster.exitStatus == nil { return }
        try await startServer()
    }

    /// Runs SQL as the superuser on `database` with `psql` over the Unix socket (`-X -A -t -q -v
    /// ON_ERROR_STOP=1`, statements one by one as in a script, so `CREATE DATABASE` works) and
    /// returns its output trimmed, rows on separate lines; throws with psql's stderr on failure.
    /// Lets tests set up and inspect the database without a Swift PostgreSQL client.
    @discardableResult
    public func psql(_ sql: String, database: String = "haul") async throws -> String {
        try checkNotDestroyed()
        let script = directory + "/.psql-\(UUID().uuidString).sql"
        try sql.write(toFile: script, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }
        let output = try await Self.run(
            bin + "/psql",
            [
                "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                "-h", directory, "-p", String(port), "-U", Self.superuser, "-d", database, "-f", script,
            ], as: nil, in: directory, check: false)
        guard output.status == 0 else {
            throw PostgresServerError.psqlFailed(sql: sql, status: output.status, stderr: output.stderr)
        }
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs PostgreSQL's own `psql` client against `url` over TCP as whoever runs the tests, as
    /// any other client would log in (`-w`: never prompt for a password). Returns its exit status
    /// and everything it printed; a refused login is a status, not a throw.
    public static func client(_ url: String, _ sql: String) async throws -> (status: Int32, output: String) {
        guard let bin = binDirectory else { throw PostgresServerError.notInstalled }
        let output = try await run(
            bin + "/psql", ["-X", "-w", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql, "-d", url],
            as: nil, in: NSTemporaryDirectory(), check: false)
        return (output.status, output.text)
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: nothing to keep) and deletes the
    /// directory. Safe to call twice, and after `pause()`.
    public func destroy() async {
        let (wasDestroyed, postmaster) = state.withLockedValue { state in
            defer { state.destroyed = true }
            return (state.destroyed, state.postmaster)
        }
        guard !wasDestroyed else { return }
        // Fails harmlessly when paused; if it fails while running, the signal below stops it.
        _ = try? await Self.run(
            bin + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "-t", "30", "stop"],
            as: serverUser, in: directory, check: false)
        Self.signalPostmaster(dataDirectory: dataDirectory)
        // So the port is closed when destroy returns.
        if let postmaster { _ = await postmaster.waitForExit(timeout: .seconds(10)) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The last lines of the server log, for error messages.
    public func logTail(lines: Int = 40) -> String {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let tail = log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
        return "server log (\(logPath)):\n" + tail
    }

    // MARK: - Internals

    private func checkNotDestroyed() throws {
        if state.withLockedValue({ $0.destroyed }) { throw PostgresServerError.destroyed }
    }

    /// Starts the postmaster in the foreground, logging to `server.log`, and waits (30 s at most)
    /// until `pg_isready` gets an answer on the Unix socket in `directory`. That socket is this
    /// server's alone, unlike the TCP port another server could have taken meanwhile, and the
    /// postmaster creates it after its TCP socket, so TCP connections are accepted too.
    private func startServer() async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        let postmaster = try Postmaster.launch(
            bin + "/postgres", ["-D", dataDirectory], as: serverUser,
            in: directory, log: logPath)
        state.withLockedValue { $0.postmaster = postmaster }
        while true {
            if let status = postmaster.exitStatus {
                throw PostgresServerError.didNotStart(output: "postgres exited with status \(status)", log: logTail())
            }
            let ready = try await Self.run(
                bin + "/pg_isready", ["-h", directory, "-p", String(port), "-t", "2"],
                as: nil, in: directory, check: false)
            if ready.status == 0 { return }
            guard ContinuousClock.now < deadline else {
                Self.signalPostmaster(dataDirectory: dataDirectory)
                _ = await postmaster.waitForExit(timeout: .seconds(5))
                throw PostgresServerError.didNotStart(output: ready.text, log: logTail())
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Sends SIGQUIT (PostgreSQL's immediate shutdown) to the postmaster named in the data
    /// directory's `postmaster.pid`, if there is one: the last resort when pg_ctl cannot stop it.
    private static func signalPostmaster(dataDirectory: String) {
        guard let pidFile = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
            let first = pidFile.split(separator: "\n").first,
            let pid = pid_t(first.trimmingCharacters(in: .whitespaces)), pid > 0
        else { return }
        kill(pid, SIGQUIT)
    }

    private static func write(_ text: String, to path: String, owner: (uid: uid_t, gid: gid_t)?) throws {
        // Not atomically: a new file would belong to root; overwriting keeps the server's owner.
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        if let owner { chown(path, owner.uid, owner.gid) }
    }

    private static func append(_ text: String, to path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }
}

/// A postmaster running in the foreground, and its exit status once it has ended.
/// @unchecked: Process is not Sendable; it is kept only so Foundation keeps watching the child,
/// and the status is behind a lock.
private final class Postmaster: @unchecked Sendable {
    private let process: Process
    private let status = NIOLockedValueBox<Int32?>(nil)

    private init(process: Process) {
        self.process = process
    }

    /// Starts `executable` with stdout and stderr appended to `log`.
    static func launch(
        _ executable: String, _ arguments: [String], as user: String?, in directory: String,
        log: String
    ) throws -> Postmaster {
        let process = try PostgresServer.makeProcess(executable, arguments, as: user, in: directory)
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        try handle.seekToEnd()
        process.standardOutput = handle
        process.standardError = handle
        let postmaster = Postmaster(process: process)
        let status = postmaster.status
        process.terminationHandler = { process in
            status.withLockedValue { $0 = process.terminationStatus }
        }
        try process.run()
        return postmaster
    }

    /// The exit status once the process has ended; nil while it runs.
    var exitStatus: Int32? { status.withLockedValue { $0 } }

    /// Whether it ended within `timeout`.
    func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while exitStatus == nil {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
