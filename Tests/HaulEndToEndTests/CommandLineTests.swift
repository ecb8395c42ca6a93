import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import Testing

/// What a user sees: exit codes, one-line errors, progress modes, lists of URLs.
@Suite(.timeLimit(.minutes(2))) struct CommandLineTests {
    let payload = Payload(seed: 5, length: 300_000)

    @Test func downloadsAndThenSaysAlreadyComplete() async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        let first = try await HaulProcess.run(["get", world.server.url("/file.bin")], in: world)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("saved \(world.directory)/file.bin"))
        #expect(payload.mismatch(inFileAt: world.directory + "/file.bin") == nil)
        let second = try await HaulProcess.run(["get", world.server.url("/file.bin")], in: world)
        #expect(second.status == 0)
        #expect(second.stderr.contains("already complete"))
        #expect(world.server.requests(to: "/file.bin").count == 1, "nothing downloaded again")
        try await world.close()
    }

    @Test(arguments: [
        (["get", "/missing"], ExitCodesExpected.http, "HTTP 404"),
        (["get", "ftp://127.0.0.1/x"], ExitCodesExpected.usage, "unsupported scheme 'ftp'"),
        (["get", "not a url"], ExitCodesExpected.usage, "is not a URL"),
        (["get", "/file.bin", "--range", "9-1"], ExitCodesExpected.usage, "--range must look like"),
        (["get", "/file.bin", "--checksum", "sha-256=1234"], ExitCodesExpected.usage, "64 hex digits"),
        (["get", "/file.bin", "-H", "NoColon"], ExitCodesExpected.usage, "Name: value"),
        (["get", "/file.bin", "/file.bin", "-o", "x"], ExitCodesExpected.usage, "-o names one file"),
        (["get"], ExitCodesExpected.usage, "no URL"),
        (["get", "--frobnicate"], ExitCodesExpected.usage, "Unknown option"),
        (
            ["get", "/file.bin", "--checksum", "md5=00000000000000000000000000000000"], ExitCodesExpected.verification,
            "md5 is"
        ),
        (
            ["get", "http://127.0.0.1:1/x", "--retries", "1", "--timeout", "1"], ExitCodesExpected.network,
            "http://127.0.0.1:1/x"
        ),
    ])
    func badInputGetsOneLineAndItsOwnExitCode(arguments: [String], status: Int32, message: String) async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        let resolved = arguments.map { $0.hasPrefix("/") ? world.server.url($0) : $0 }
        let result = try await HaulProcess.run(resolved + ["--quiet"], in: world)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        #expect(!world.files().contains("file.bin"), "no final file")
        if status == ExitCodesExpected.http { #expect(result.stderr.contains(world.server.url("/missing"))) }
        try await world.close()
    }

    @Test func unwritableDestinationIsAFileSystemError() async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        let blocker = world.directory + "/blocker"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: blocker))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/file.bin"), "-d", blocker + "/sub", "--quiet"], in: world)
        #expect(result.status == ExitCodesExpected.fileSystem)
        #expect(result.stderr.contains(world.server.url("/file.bin")))
        #expect(result.stderr.contains("not a directory"))
        #expect(try String(contentsOfFile: blocker, encoding: .utf8) == "keep")
        try await world.close()
    }

    @Test func fileSizeLimitIsDiskFullAndLosesNothing() async throws {
        let world = try await World.make()
        let big = Payload(seed: 8, length: 2_000_000)
        world.server.setRoute("/big.bin", Route(payload: big))
        let keep = world.directory + "/keep.txt"
        try Data("already here".utf8).write(to: URL(fileURLWithPath: keep))
        // 1.5 MiB per file: the state database stays far below, the download goes past it, and
        // frequent checkpoints make sure some of it was committed first.
        let result = try await HaulProcess.run(
            ["get", world.server.url("/big.bin"), "--quiet", "--checkpoint-interval", "0.001"],
            in: world, shell: "ulimit -f 1536")
        #expect(result.status == ExitCodesExpected.fileSystem, "\(result.stderr)")
        #expect(result.stderr.contains("File too large"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(try String(contentsOfFile: keep, encoding: .utf8) == "already here")
        #expect(!world.files().contains("big.bin"))
        // And with room again, the same command finishes from what was kept.
        let again = try await HaulProcess.run(["get", world.server.url("/big.bin"), "--quiet"], in: world)
        #expect(again.status == 0, "\(again.stderr)")
        let resumedAt = world.server.requests(to: "/big.bin").last?.rangeStart ?? 0
        #expect(resumedAt > 0 && resumedAt <= 1536 * 1024, "resumed from the last checkpoint, at \(resumedAt)")
        #expect(big.mismatch(inFileAt: world.directory + "/big.bin") == nil)
        try await world.close()
    }

    @Test func httpsWithAPrivateCertificateAuthority() async throws {
        let tls = try TLSFiles.makeSelfSigned()
        let world = try await World.make(tls: tls)
        world.server.setRoute("/file.bin", Route(payload: payload))
        let untrusted = try await HaulProcess.run(
            ["get", world.server.url("/file.bin"), "--quiet", "--retries", "1", "--timeout", "1"], in: world)
        #expect(untrusted.status == ExitCodesExpected.network)
        #expect(untrusted.stderr.contains("certificate is not trusted"), "\(untrusted.stderr)")
        let trusted = try await HaulProcess.run(
            ["get", world.server.url("/file.bin"), "--quiet", "--cacert", tls.certificatePath], in: world)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/file.bin") == nil)
        try await world.close()
    }

    @Test func listOfURLsWithJobsLimit() async throws {
        let world = try await World.make()
        var lines = ["# comment", ""]
        for index in 0..<4 {
            world.server.setRoute("/f\(index).bin", Route(payload: Payload(seed: UInt64(index), length: 100_000)))
            lines.append(world.server.url("/f\(index).bin"))
        }
        let list = world.directory + "/../urls.txt"
        try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", "-i", list, "-j", "2", "-d", "out", "--quiet"], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        for index in 0..<4 {
            #expect(
                Payload(seed: UInt64(index), length: 100_000).mismatch(inFileAt: world.directory + "/out/f\(index).bin")
                    == nil)
        }
        try await world.close()
    }

    /// `-i -`: the list on standard input, read to its end (haul reads it with read(2)).
    @Test func listOfURLsOnStandardInput() async throws {
        let world = try await World.make()
        var lines = ["# comment", ""]
        for index in 0..<3 {
            world.server.setRoute("/s\(index).bin", Route(payload: Payload(seed: UInt64(40 + index), length: 70_000)))
            lines.append("  " + world.server.url("/s\(index).bin") + "  ")
        }
        let list = world.directory + "/../stdin-urls.txt"
        try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(
            ["get", "-i", "-", "-d", "in", "--quiet"], in: world, shell: "exec < '\(list)'")
        #expect(result.status == 0, "\(result.stderr)")
        for index in 0..<3 {
            #expect(
                Payload(seed: UInt64(40 + index), length: 70_000)
                    .mismatch(inFileAt: world.directory + "/in/s\(index).bin") == nil)
        }
        try await world.close()
    }

    @Test func jsonLinesDescribeTheDownload() async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/file.bin"), "--json", "-o", "named.bin"], in: world)
        #expect(result.status == 0)
        // The daemon's event schema, decoded strictly: an unknown type or status fails here.
        let events = try result.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(EventView.self, from: Data($0.utf8))
        }
        #expect(events.first?.type == .queued)
        #expect(events.contains { $0.type == .started && $0.status == .running && $0.completedLength == 0 })
        #expect(events.allSatisfy { $0.url == world.server.url("/file.bin") && $0.id == events.first?.id })
        let last = try #require(events.last)
        #expect(last.type == .completed && last.status == .completed && last.alreadyComplete == nil)
        #expect(last.path == world.directory + "/named.bin")
        let again = try await HaulProcess.run(
            ["get", world.server.url("/file.bin"), "--json", "-o", "named.bin"], in: world)
        let repeated = try again.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(EventView.self, from: Data($0.utf8))
        }
        #expect(repeated.last?.type == .completed && repeated.last?.alreadyComplete == true, "\(again.stdout)")
        #expect(payload.mismatch(inFileAt: world.directory + "/named.bin") == nil)
        try await world.close()
    }

    @Test func plainProgressWhenNotATerminal() async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: payload))
        let result = try await HaulProcess.run(["get", world.server.url("/file.bin")], in: world)
        #expect(result.status == 0)
        #expect(!result.stderr.contains("\u{1B}["), "no terminal escapes into a file or pipe")
        #expect(result.stdout.isEmpty)
        try await world.close()
    }
}

/// The documented exit codes, spelled out here so a renumbering breaks a test.
enum ExitCodesExpected {
    static let usage: Int32 = 2
    static let http: Int32 = 3
    static let network: Int32 = 4
    static let verification: Int32 = 5
    static let fileSystem: Int32 = 6
}
