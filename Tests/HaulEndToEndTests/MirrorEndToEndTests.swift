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
        let result = try await HaulProcess.run(["get", "--mirrors", "-x", "4", "-v", "-o", "m.bin", world.server.url("/gone.bin"),
                                                world.server.url("/m.bin"), other.url("/m.bin")], in: world)
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
        try "\(world.server.url("/a.bin"))\t\(world.server.url("/b.bin"))\n".write(toFile: list, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", "-i", list], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/a.bin") == nil)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/b.bin"), "one file, not two")

        let bad = try await HaulProcess.run(["get", "--mirrors", world.server.url("/a.bin"), "ftp://127.0.0.1/a.bin"], in: world)
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(bad.stderr == "haul: unsupported scheme 'ftp' in ftp://127.0.0.1/a.bin (only http and https)\n", "\(bad.stderr)")
        try await world.close()
    }

    /// A signed URL that expires midway: exit 14 with the bytes kept; the same command with a
    /// new URL and the same -o finishes from them, byte-exact, asking the new server only for
    /// the rest.
    @Test func anExpiredURLExits14AndANewOneFinishes() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2113, length: 2_000_000)
        world.server.setRoute("/signed", Route(payload: payload, script: [.dropAfter(700_000)], then: .status(403)))
        world.server.setRoute("/renewed", Route(payload: payload, etag: "\"other\""))
        let expired = try await HaulProcess.run(["get", "-x", "1", "-o", "f.bin", world.server.url("/signed")], in: world)
        #expect(expired.status == 14, "\(expired.stderr)")
        #expect(expired.stderr.contains("HTTP 403 Forbidden after"), "\(expired.stderr)")
        #expect(FileManager.default.fileExists(atPath: world.directory + "/f.bin.part"))
        let renewed = try await HaulProcess.run(["get", "-x", "1", "-o", "f.bin", world.server.url("/renewed")], in: world)
        #expect(renewed.status == 0, "\(renewed.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/f.bin") == nil)
        #expect(world.server.bodyBytesSent(to: "/renewed") < payload.length - 500_000)
        try await world.close()
    }
}
