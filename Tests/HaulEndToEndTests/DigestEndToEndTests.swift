import Crypto
import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import Testing

/// The server's `Repr-Digest`/`Digest` through the real binary: shown with `-v` and `--json`,
/// a wrong one exits 5 with nothing under the final name (over one and four connections), it
/// survives a `kill -9` in the store, and `--checksum` wins over it.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DigestEndToEndTests {
    let payload = Payload(seed: 2121, length: 3_000_000)
    let wrong = Payload(seed: 2122, length: 3_000_000)

    func repr(_ payload: Payload) -> [(String, String)] {
        [
            ("Repr-Digest", "sha-256=:\(payload.base64Digest(SHA256.self)):"),
            ("Digest", "MD5=\(payload.base64Digest(Insecure.MD5.self))"),
        ]
    }

    func lastEvent(_ stdout: String) throws -> EventView {
        let line = try #require(stdout.split(separator: "\n").last)
        return try JSONDecoder().decode(EventView.self, from: Data(line.utf8))
    }

    @Test func theRightDigestIsVerifiedAndShown() async throws {
        let world = try await World.make()
        world.server.setRoute("/big.bin", Route(payload: payload, entityHeaders: repr(payload)))
        let verbose = try await HaulProcess.run(["get", world.server.url("/big.bin"), "-v"], in: world)
        #expect(verbose.status == 0, "\(verbose.stderr)")
        #expect(
            verbose.stderr.contains("haul: \(world.server.url("/big.bin")): verified sha-256 from Repr-Digest\n"),
            "\(verbose.stderr)")
        #expect(world.sha256(of: world.directory + "/big.bin") == payload.sha256)

        let json = try await HaulProcess.run(
            ["get", world.server.url("/big.bin"), "--json", "-o", "again.bin", "-x", "4", "-k", "256K"],
            in: world)
        #expect(json.status == 0, "\(json.stderr)")
        let last = try lastEvent(json.stdout)
        #expect(last.type == .completed)
        #expect(last.verified?.algorithm == "sha-256" && last.verified?.from == "Repr-Digest", "\(json.stdout)")
        #expect(world.sha256(of: world.directory + "/again.bin") == payload.sha256)
        #expect(world.server.responses(to: "/big.bin").suffix(4).allSatisfy { $0.status == 206 })
        try await world.close()
    }

    /// A digest that is not the bytes': exit 5, one clear line, no final file, over one
    /// connection (a 200) and four (206s).
    @Test(arguments: ["1", "4"])
    func aWrongDigestExitsFiveAndPublishesNothing(connections: String) async throws {
        let world = try await World.make()
        world.server.setRoute("/big.bin", Route(payload: payload, entityHeaders: repr(wrong)))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/big.bin"), "-x", connections, "-k", "256K"], in: world)
        #expect(result.status == ExitCodesExpected.verification, "\(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("haul: ") }
        #expect(
            errors.count == 1 && errors.first?.contains("the server's Repr-Digest says") == true, "\(result.stderr)")
        #expect(!world.files().contains("big.bin"), "\(world.files())")
        try await world.close()
    }

    /// `kill -9` mid-download, then the same command against a server that no longer sends a
    /// digest: the one stored with the checkpoint is still checked. A wrong one fails the resumed
    /// run; a right one is shown as verified, and the resume did not start over.
    @Test(arguments: [false, true])
    func aKilledDownloadStillVerifiesItsStoredDigest(right: Bool) async throws {
        let world = try await World.make()
        world.server.setRoute(
            "/big.bin",
            Route(
                payload: payload, throttle: 400_000, script: [.stallAfter(2_000_000)],
                entityHeaders: repr(right ? payload : wrong)))
        let first = try HaulProcess(
            ["get", world.server.url("/big.bin"), "--quiet", "-x", "1", "--checkpoint-interval", "0.05"],
            home: world.home, workingDirectory: world.directory)
        let checkpoint = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        #expect(try await world.storedRecord()?.serverDigest?.field == .reprDigest)

        world.server.setRoute("/big.bin", Route(payload: payload))
        let second = try await HaulProcess.run(["get", world.server.url("/big.bin"), "--json"], in: world)
        let resumed = try #require(world.server.requests(to: "/big.bin").last)
        #expect(resumed.rangeStart >= checkpoint && resumed.rangeStart > 0, "resumed at \(resumed.rangeStart)")
        if right {
            #expect(second.status == 0, "\(second.stderr)")
            let verified = try lastEvent(second.stdout).verified
            #expect(verified?.algorithm == "sha-256" && verified?.from == "Repr-Digest", "\(second.stdout)")
            #expect(world.sha256(of: world.directory + "/big.bin") == payload.sha256)
        } else {
            #expect(second.status == ExitCodesExpected.verification, "\(second.stderr)")
            #expect(try lastEvent(second.stdout).error?.code == "digest-mismatch", "\(second.stdout)")
            #expect(!world.files().contains("big.bin"), "\(world.files())")
        }
        try await world.close()
    }

    /// `--checksum` wins: a wrong server digest is not checked when the user gave one, and `-v`
    /// says which was verified.
    @Test func theChecksumWinsOverAWrongServerDigest() async throws {
        let world = try await World.make()
        world.server.setRoute("/big.bin", Route(payload: payload, entityHeaders: repr(wrong)))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/big.bin"), "-v", "--checksum", "sha-256=\(payload.sha256)"],
            in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("verified sha-256 from --checksum"), "\(result.stderr)")
        #expect(world.sha256(of: world.directory + "/big.bin") == payload.sha256)
        try await world.close()
    }
}
