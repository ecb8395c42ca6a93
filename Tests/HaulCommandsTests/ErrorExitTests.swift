import ArgumentParser
import Foundation
import HaulAPI
import HaulCore
import Testing

@testable import HaulCommands

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `haul` reports errors it did not make itself, and how the daemon client tells a daemon
/// that does not answer in time from no daemon at all.
@Suite(.timeLimit(.minutes(1))) struct ErrorExitTests {
    struct Unexpected: Error, CustomStringConvertible {
        var description: String { "the disk said something odd" }
    }

    /// An error that is neither a `HaulError` nor ArgumentParser's is an internal error (1)
    /// with its message, not a usage error.
    @Test func anUnexpectedErrorIsInternalNotUsage() throws {
        let failure = try #require(HaulCommand.failure(for: Unexpected()))
        #expect(failure.code == ExitCodes.internal)
        #expect(failure.line == "haul: internal error: the disk said something odd")
    }

    /// ArgumentParser's parse and validation errors stay usage errors (2), with the hint.
    @Test func parseAndValidationErrorsAreUsage() throws {
        let validation = try #require(HaulCommand.failure(for: ValidationError("-j must be at least 1")))
        #expect(validation.code == ExitCodes.usage)
        #expect(validation.line == "haul: -j must be at least 1 (see 'haul --help')")
        var parseError: (any Error)?
        do {
            _ = try HaulCommand.parseAsRoot(["get", "--no-such-option"])
        } catch {
            parseError = error
        }
        let thrown = try #require(parseError)
        let parse = try #require(HaulCommand.failure(for: thrown))
        #expect(parse.code == ExitCodes.usage)
        #expect(parse.line.hasSuffix("(see 'haul --help')"))
    }

    @Test func helpListsEveryExitCode() {
        let help = HaulCommand.helpMessage(columns: 10_000)
        for code in [ExitCodes.storeUnavailable, ExitCodes.storeLogin, ExitCodes.storeTooNew, ExitCodes.fleetNameInUse]
        {
            #expect(help.contains(" \(code) "), "exit code \(code) is missing from --help")
        }
        #expect(help.contains("11 the fleet's database cannot be reached"))
    }

    /// A listening socket that never accepts: the kernel completes the handshake, the request
    /// goes out, and no answer ever comes.
    @Test func aDaemonThatNeverAnswersIsATimeoutNotNoDaemon() async throws {
        let (socket, port) = try Self.socket(listening: true)
        defer { close(socket) }
        let client = DaemonClient(baseURL: "http://127.0.0.1:\(port)", secret: "s", timeout: .milliseconds(300))
        let error = await #expect(throws: HaulError.self) { () async throws -> [String: String] in
            try await client.get("/downloads")
        }
        #expect(error?.code == .network)
        #expect(error?.message.contains("accepted the request but did not answer") == true)
        #expect(error.map(ExitCodes.code(for:)) == ExitCodes.network)
    }

    /// A port where nothing listens: no daemon.
    @Test func noListenerIsNoDaemon() async throws {
        let (socket, port) = try Self.socket(listening: false)
        defer { close(socket) }
        let client = DaemonClient(baseURL: "http://127.0.0.1:\(port)", secret: "s", timeout: .seconds(30))
        let error = await #expect(throws: DaemonError.self) { () async throws -> [String: String] in
            try await client.get("/downloads")
        }
        #expect(error?.code == .noDaemon)
        #expect(error?.message.hasPrefix("no haul daemon answers at http://127.0.0.1:\(port)") == true)
        #expect(error.map(ExitCodes.code(for:)) == ExitCodes.noDaemon)
    }

    /// A TCP socket bound to a free port on 127.0.0.1; listening (with nothing accepting) or not.
    static func socket(listening: Bool) throws -> (Int32, Int) {
        #if canImport(Glibc)
            let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Unexpected() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound, !listening || listen(descriptor, 8) == 0 else {
            close(descriptor)
            throw Unexpected()
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }
}
