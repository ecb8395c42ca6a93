import Foundation
import HaulTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The PostgreSQL server tests start themselves: it must really check passwords over TCP, close
/// its port when paused and keep its data across a pause, or the tests built on it prove nothing.
/// Not skipped without PostgreSQL: `start()` then fails saying what to install.
@Suite(.serialized, .timeLimit(.minutes(3))) struct PostgresServerTests {
    @Test func acceptsTheHaulRoleOverTCPAndRefusesAWrongPassword() async throws {
        try await Self.withServer { server in
            #expect(try await server.psql("select 1") == "1")
            #expect(try await server.psql("select current_user") == "postgres")
            #expect(try await server.psql("select current_database()") == "haul")

            let right = try await Self.client(server.url, "select current_user || ' ' || current_database()")
            #expect(right.status == 0, "\(right.output)")
            #expect(right.output.trimmingCharacters(in: .whitespacesAndNewlines) == "haul haul")

            let wrong = try await Self.client(server.urlWithWrongPassword, "select 1")
            #expect(wrong.status != 0)
            #expect(wrong.output.contains("password authentication failed"), "\(wrong.output)")

            // Any client with no password at all is refused too, not trusted.
            let none = try await Self.client("postgresql://haul@127.0.0.1:\(server.port)/haul", "select 1")
            #expect(none.status != 0)
        }
    }

    @Test func pauseClosesThePortAndResumeKeepsTheData() async throws {
        try await Self.withServer { server in
            // Created as the haul role, as the code under test would.
            let create = try await Self.client(server.url, "create table kept (id int, name text); insert into kept values (7, 'seven')")
            #expect(create.status == 0, "\(create.output)")
            #expect(Self.acceptsConnections(port: server.port))

            try await server.pause()
            #expect(!Self.acceptsConnections(port: server.port))
            await #expect(throws: (any Error).self) { try await server.psql("select 1") }
            let refused = try await Self.client(server.url, "select 1")
            #expect(refused.status != 0)

            try await server.resume()
            #expect(Self.acceptsConnections(port: server.port))
            #expect(try await server.psql("select id || ':' || name from kept") == "7:seven")
            let after = try await Self.client(server.url, "select name from kept where id = 7")
            #expect(after.status == 0, "\(after.output)")
            #expect(after.output.trimmingCharacters(in: .whitespacesAndNewlines) == "seven")
        }
    }

    @Test func psqlReportsSQLErrors() async throws {
        try await Self.withServer { server in
            do {
                try await server.psql("select * from no_such_table")
                Issue.record("psql should have thrown")
            } catch {
                #expect("\(error)".contains("no_such_table"), "\(error)")
            }
            // Scripts run statement by statement, so CREATE DATABASE works among others.
            try await server.psql("create database other; select 1")
            #expect(try await server.psql("select current_database()", database: "other") == "other")
        }
    }

    @Test func destroyStopsTheServerAndRemovesItsDirectory() async throws {
        let server = try await PostgresServer.start()
        #expect(FileManager.default.fileExists(atPath: server.directory))
        await server.destroy()
        #expect(!FileManager.default.fileExists(atPath: server.directory))
        #expect(!Self.acceptsConnections(port: server.port))
        await server.destroy()
        await #expect(throws: (any Error).self) { try await server.psql("select 1") }
    }

    // MARK: - Helpers

    /// Starts a server, runs `body` and destroys the server however `body` ends.
    private static func withServer(_ body: (PostgresServer) async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        do {
            try await body(server)
        } catch {
            await server.destroy()
            throw error
        }
        await server.destroy()
    }

    /// Runs PostgreSQL's own `psql` client against `url` over TCP, as whoever runs the tests;
    /// returns its exit status and everything it printed. `-w`: never prompt for a password.
    private static func client(_ url: String, _ sql: String) async throws -> (status: Int32, output: String) {
        let bin = try #require(PostgresServer.binDirectory, "PostgreSQL is not installed")
        let outputPath = NSTemporaryDirectory() + "haul-psql-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bin + "/psql")
        process.arguments = ["-X", "-w", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql, "-d", url]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGCONNECT_TIMEOUT"] = "10"
        environment["PGPASSFILE"] = "/dev/null"
        environment["LC_ALL"] = "C"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: error)
            }
        }
        try? output.close()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text)
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    private static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
