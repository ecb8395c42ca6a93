import Foundation
import HaulTesting
import Testing

/// The PostgreSQL server tests start themselves: it must really check passwords over TCP, close
/// its port when paused and keep its data across a pause, or the tests built on it prove nothing.
/// Not skipped without PostgreSQL: `start()` then fails saying what to install.
@Suite(.serialized, .timeLimit(.minutes(3))) struct PostgresServerTests {
    @Test func acceptsTheHaulRoleOverTCPAndRefusesAWrongPassword() async throws {
        try await Self.withServer { server in
            #expect(try await server.psql("select 1") == "1")
            #expect(try await server.psql("select current_user") == "postgres")
            #expect(try await server.psql("select current_database()") == "haul")

            let right = try await PostgresServer.client(server.url, "select current_user || ' ' || current_database()")
            #expect(right.status == 0, "\(right.output)")
            #expect(right.output.trimmingCharacters(in: .whitespacesAndNewlines) == "haul haul")

            let wrong = try await PostgresServer.client(server.urlWithWrongPassword, "select 1")
            #expect(wrong.status != 0)
            #expect(wrong.output.contains("password authentication failed"), "\(wrong.output)")

            // Any client with no password at all is refused too, not trusted.
            let none = try await PostgresServer.client("postgresql://haul@127.0.0.1:\(server.port)/haul", "select 1")
            #expect(none.status != 0)
        }
    }

    @Test func pauseClosesThePortAndResumeKeepsTheData() async throws {
        try await Self.withServer { server in
            // Created as the haul role, as the code under test would.
            let create = try await PostgresServer.client(
                server.url, "create table kept (id int, name text); insert into kept values (7, 'seven')")
            #expect(create.status == 0, "\(create.output)")
            #expect(LoopbackPort.acceptsConnections(server.port))

            try await server.pause()
            #expect(!LoopbackPort.acceptsConnections(server.port))
            await #expect(throws: (any Error).self) { try await server.psql("select 1") }
            let refused = try await PostgresServer.client(server.url, "select 1")
            #expect(refused.status != 0)

            try await server.resume()
            #expect(LoopbackPort.acceptsConnections(server.port))
            #expect(try await server.psql("select id || ':' || name from kept") == "7:seven")
            let after = try await PostgresServer.client(server.url, "select name from kept where id = 7")
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
        #expect(!LoopbackPort.acceptsConnections(server.port))
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
}
