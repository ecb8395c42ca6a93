import Crypto
import Foundation
import HaulCore
import HaulTesting
import Testing

/// Mirrors through the real binary: `haul get --mirrors` and an `-i` list with tab-separated
/// URLs, against two test servers, one of them serving another file.
@Suite(.timeLimit(.minutes(2))) struct MirrorEndToEndTests {
    /// The primary is dead (404); of the mirrors one serves the file and one another file of the
    /// same length. haul finishes from the good one, says which source it dropped, exits 0, and
    /// the file is byte-exact.
    @Test func getWithMirrorsFinishesFromTheConsistentOne() async throws {
        let world = try await World.make()
        let other = try await TestServer.start()
        let payload = Payload(seed: 2110, length: 4 << 20)
        world.server.setRoute("/gone.bin", Route(payload: payload, then: .status(404)))
        world.server.setRoute("/m.bin", Route(payload: payload, throttle: 4 << 20))
        other.setRoute("/m.bin", Route(payload: Payload(seed: 2111, length: payload.length), throttle: 4 << 20))
        let result = try await HaulProcess.run(
            [
                "get", "--mirrors", "-x", "4", "-v", "-o", "m.bin", world.server.url("/gone.bin"),
                world.server.url("/m.bin"), other.url("/m.bin"),
            ], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/m.bin") == nil)
        #expect(result.stderr.contains("source dropped"), "\(result.stderr)")
        try await other.shutdown()
        try await world.close()
    }

    /// An `-i` line with several tab-separated URLs is one file; a line with one URL of another
    /// scheme is refused with one line, and the good lines still download.
    @Test func tabSeparatedLinesAreOneFileEach() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2112, length: 1 << 20)
        world.server.setRoute("/a.bin", Route(payload: payload))
        world.server.setRoute("/b.bin", Route(payload: payload))
        let list = world.directory + "/list.txt"
        try "\(world.server.url("/a.bin"))\t\(world.server.url("/b.bin"))\n".write(
            toFile: list, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", "-i", list], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/a.bin") == nil)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/b.bin"), "one file, not two")

        let bad = try await HaulProcess.run(
            ["get", "--mirrors", world.server.url("/a.bin"), "ftp://127.0.0.1/a.bin"], in: world)
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(
            bad.stderr == "haul: unsupported scheme 'ftp' in ftp://127.0.0.1/a.bin (only http and https)\n",
            "\(bad.stderr)")
        try await world.close()
    }

    /// A signed URL that expires midway: exit 14 with the bytes kept; the same command with a
    /// new URL and the same -o finishes from them, byte-exact, asking the new server only for
    /// the rest (from the last checkpoint).
    @Test func anExpiredURLExits14AndANewOneFinishes() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2113, length: 2_000_000)
        world.server.setRoute("/signed", Route(payload: payload, script: [.dropAfter(700_000)], then: .status(403)))
        world.server.setRoute("/renewed", Route(payload: payload, etag: "\"other\""))
        let expired = try await HaulProcess.run(
            ["get", "-x", "1", "-o", "f.bin", world.server.url("/signed")], in: world)
        #expect(expired.status == 14, "\(expired.stderr)")
        #expect(expired.stderr.contains("HTTP 403 Forbidden after"), "\(expired.stderr)")
        #expect(FileManager.default.fileExists(atPath: world.directory + "/f.bin.part"))
        let renewed = try await HaulProcess.run(
            ["get", "-x", "1", "-o", "f.bin", world.server.url("/renewed")], in: world)
        #expect(renewed.status == 0, "\(renewed.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/f.bin") == nil)
        // Asked from where the checkpoint left off, not from byte 0.
        let resumedAt = world.server.requests(to: "/renewed").first?.range.flatMap(ByteRange.init(parsing:))?.start ?? 0
        #expect(resumedAt > 0, "\(world.server.requests(to: "/renewed").map(\.range))")
        #expect(world.server.bodyBytesSent(to: "/renewed") < payload.length)

        // With --refresh-command the same expiry costs nothing: the command's URL continues the
        // download in the same run.
        world.server.setRoute("/signed2", Route(payload: payload, script: [.dropAfter(700_000)], then: .status(403)))
        world.server.setRoute("/renewed2", Route(payload: payload, etag: "\"other\""))
        let refreshed = try await HaulProcess.run(
            [
                "get", "-x", "1", "-o", "g.bin", "--refresh-command",
                "echo \(world.server.url("/renewed2"))", world.server.url("/signed2"),
            ], in: world)
        #expect(refreshed.status == 0, "\(refreshed.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/g.bin") == nil)
        #expect(world.server.bodyBytesSent(to: "/renewed2") < payload.length)
        let empty = try await HaulProcess.run(
            ["get", "--refresh-command", " ", world.server.url("/renewed2")], in: world)
        #expect(empty.status == 2 && empty.stderr.contains("--refresh-command needs a command"), "\(empty.stderr)")
        try await world.close()
    }

    func metalink(_ name: String, sha256: String, urls: [String]) -> String {
        let list = urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined()
        return "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"\(name)\">"
            + "<size>2000000</size><hash type=\"sha-256\">\(sha256)</hash>\(list)</file></metalink>"
    }

    /// `haul get NAME.meta4`: the file from its URLs in order of preference (the first one dead),
    /// checked by the document's sha-256; a wrong digest exits 5 and publishes nothing; a
    /// malformed document is one line and exit 2.
    @Test func metalinkFiles() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2114, length: 2_000_000)
        world.server.setRoute("/dead.iso", Route(payload: payload, then: .status(404)))
        world.server.setRoute("/good.iso", Route(payload: payload))
        let digest = payload.sha256
        let good = world.directory + "/good.meta4"
        try metalink("disk.iso", sha256: digest, urls: [world.server.url("/dead.iso"), world.server.url("/good.iso")])
            .write(toFile: good, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", good], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/disk.iso") == nil)

        let wrong = world.directory + "/wrong.meta4"
        try metalink("other.iso", sha256: String(repeating: "0", count: 64), urls: [world.server.url("/good.iso")])
            .write(toFile: wrong, atomically: true, encoding: .utf8)
        let mismatch = try await HaulProcess.run(["get", "--metalink", wrong], in: world)
        #expect(mismatch.status == 5, "\(mismatch.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/other.iso"))

        let broken = world.directory + "/broken.meta4"
        try "<metalink><file name=\"x\">".write(toFile: broken, atomically: true, encoding: .utf8)
        let malformed = try await HaulProcess.run(["get", broken], in: world)
        #expect(malformed.status == 2, "\(malformed.stderr)")
        #expect(
            malformed.stderr.hasPrefix("haul: \(broken): not a valid Metalink (XML): ")
                && malformed.stderr.filter { $0 == "\n" }.count == 1,
            "\(malformed.stderr)")
        let missing = try await HaulProcess.run(["get", world.directory + "/none.meta4"], in: world)
        #expect(
            missing.status == 2 && missing.stderr == "haul: cannot read the Metalink \(world.directory)/none.meta4\n",
            "\(missing.stderr)")
        try await world.close()
    }

    /// A Metalink with piece digests whose preferred mirror serves one piece wrong (same length,
    /// same ETag: only the digests can tell): the piece fails its sha-256, that mirror is dropped,
    /// and only that piece (plus the probe) comes again from the other mirror; the file is
    /// byte-exact and exit 0. A document whose pieces all fail on the only mirror exits 5 with
    /// nothing published.
    @Test func aBadPieceIsFetchedAgainFromAnotherMirror() async throws {
        let world = try await World.make()
        let pieceLength: Int64 = 256 << 10
        let payload = Payload(seed: 2115, length: 2_000_000)
        world.server.setRoute("/bad.iso", Route(payload: payload.damaging(600_000..<600_010)))
        world.server.setRoute("/good.iso", Route(payload: payload))
        var pieces: [String] = []
        var offset: Int64 = 0
        while offset < payload.length {
            let end = min(payload.length, offset + pieceLength)
            pieces.append(SHA256.hash(data: payload.bytes(offset..<end)).map { String(format: "%02x", $0) }.joined())
            offset = end
        }
        func document(_ name: String, urls: [String]) -> String {
            let list = urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined()
            let hashes = pieces.map { "<hash>\($0)</hash>" }.joined()
            return "<?xml version=\"1.0\"?><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"\(name)\">"
                + "<size>\(payload.length)</size><hash type=\"sha-256\">\(payload.sha256)</hash>"
                + "<pieces length=\"\(pieceLength)\" type=\"sha-256\">\(hashes)</pieces>\(list)</file></metalink>"
        }
        let path = world.directory + "/pieces.meta4"
        try document("disk.iso", urls: [world.server.url("/bad.iso"), world.server.url("/good.iso")])
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", "-x", "1", "-v", path], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/disk.iso") == nil)
        #expect(result.stderr.contains("fail their sha-256 piece digest"), "\(result.stderr)")
        // One piece of 256 KiB and a probe, not the file.
        #expect(
            world.server.bodyBytesSent(to: "/good.iso") <= pieceLength + (64 << 10),
            "\(world.server.bodyBytesSent(to: "/good.iso"))")

        let only = world.directory + "/only.meta4"
        try document("only.iso", urls: [world.server.url("/bad.iso")]).write(
            toFile: only, atomically: true, encoding: .utf8)
        let failed = try await HaulProcess.run(["get", "-x", "1", only], in: world)
        #expect(failed.status == 5, "\(failed.stderr)")
        #expect(failed.stderr.contains("failed sha-256 digests"), "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/only.iso"))
        try await world.close()
    }
}
