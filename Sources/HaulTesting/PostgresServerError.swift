/// Why the tests' PostgreSQL could not be started, driven or reached: each case says what to
/// install or what the server printed, so a failing test names its cause.
public enum PostgresServerError: Error, Sendable, CustomStringConvertible {
    case notInstalled
    case noPostgresUser
    case noRunuser
    case noPort
    case commandFailed(command: String, status: Int32, output: String)
    case didNotStart(output: String, log: String)
    case psqlFailed(sql: String, status: Int32, stderr: String)
    case destroyed

    public var description: String {
        switch self {
        case .notInstalled:
            """
            PostgreSQL is not installed: no /usr/lib/postgresql/<version>/bin/initdb (apt-get install postgresql; \
            .ci/run does)
            """
        case .noPostgresUser:
            """
            running as root, and there is no `postgres` user to run PostgreSQL as (it refuses root; Debian's \
            package creates the user)
            """
        case .noRunuser:
            "running as root, and there is no runuser to run PostgreSQL as the `postgres` user"
        case .noPort:
            "no free port for PostgreSQL"
        case .commandFailed(let command, let status, let output):
            "\(command) exited with \(status):\n\(output)"
        case .didNotStart(let output, let log):
            "PostgreSQL did not start (it has 30 s to accept connections):\n\(output)\n\(log)"
        case .psqlFailed(let sql, let status, let stderr):
            "psql exited with \(status) running:\n\(sql)\n\(stderr)"
        case .destroyed:
            "the PostgreSQL server was destroyed"
        }
    }
}
