import Foundation
import HaulCore
import HaulTesting
import Testing

/// `haul get -N` (as wget's `--timestamping`) and `--remote-time` through the binary against the
/// test server, which answers 304 to an `If-Modified-Since` not older than its `Last-Modified`.
@Suite(.timeLimit(.minutes(2))) struct TimestampingEndToEndTests {
    let november1 = "Sun, 01 Nov 2026 12:00:00 GMT"
    let november1Seconds: Int64 = 1_793_534_400
    let november2 = "Mon, 02 Nov 2026 08:00:00 GMT"
    let november2Seconds: Int64 = 1_793_606_400

    func modified(_ path: String) throws -> Int64 {
        let date = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        return Int64(date.timeIntervalSince1970)
    }

    /// Downloaded with the server's time; the same command again sends If-Modified-Since, gets
    /// 304, says so and leaves the file; a newer file on the server is downloaded and replaces it.
    @Test func skipsWhenNotModifiedAndReplacesWithANewerFile() async throws {
        let world = try await World.make()
        let old = Payload(seed: 2120, length: 700_000)
        let new = Payload(seed: 2121, length: 900_000)
        world.server.setRoute("/t.bin", Route(payload: old, lastModified: november1))
        let path = world.directory + "/t.bin"
        let command = ["get", "-N", "-o", "t.bin", world.server.url("/t.bin")]

        let first = try await HaulProcess.run(command, in: world)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(old.mismatch(inFileAt: path) == nil)
        #expect(try modified(path) == november1Seconds, "-N implies --remote-time")

        let second = try await HaulProcess.run(command, in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            (second.stdout + second.stderr).contains("not modified on the server: \(path)"),
            "\(second.stdout)\(second.stderr)")
        let asked = try #require(world.server.requests(to: "/t.bin").last)
        #expect(asked.header("If-Modified-Since") == november1)
        #expect(
            second.status == 0 && world.server.bodyBytesSent(to: "/t.bin") == old.length, "nothing sent the second time"
        )
        #expect(old.mismatch(inFileAt: path) == nil && world.files() == ["t.bin"])

        let before = world.server.requests(to: "/t.bin").count
        world.server.setRoute("/t.bin", Route(payload: new, lastModified: november2))
        let third = try await HaulProcess.run(command, in: world)
        #expect(third.status == 0, "\(third.stderr)")
        let requests = world.server.requests(to: "/t.bin")
        #expect(
            requests.count > before && requests[before].header("If-Modified-Since") == november1,
            "asked with the local time")
        #expect(new.mismatch(inFileAt: path) == nil, "the newer file replaced the old one")
        #expect(try modified(path) == november2Seconds)
        #expect(world.files() == ["t.bin"], "no .part left")
        try await world.close()
    }

    /// A file another program left there: older than the server's, it is replaced; newer, it is
    /// kept as it is (wget's rule: the local time decides).
    @Test func aFileFromElsewhereIsComparedByItsTime() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2122, length: 300_000)
        world.server.setRoute("/a.bin", Route(payload: payload, lastModified: november1))
        world.server.setRoute("/b.bin", Route(payload: payload, lastModified: november1))
        let older = world.directory + "/a.bin"
        let newer = world.directory + "/b.bin"
        try Data("old local a".utf8).write(to: URL(fileURLWithPath: older))
        try Data("newer local b".utf8).write(to: URL(fileURLWithPath: newer))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: Double(november1Seconds - 86_400))],
            ofItemAtPath: older)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: Double(november1Seconds + 86_400))],
            ofItemAtPath: newer)
        let a = try await HaulProcess.run(["get", "-N", "-o", "a.bin", world.server.url("/a.bin")], in: world)
        let b = try await HaulProcess.run(["get", "-N", "-o", "b.bin", world.server.url("/b.bin")], in: world)
        #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
        #expect(payload.mismatch(inFileAt: older) == nil)
        #expect(try modified(older) == november1Seconds)
        #expect(try String(contentsOfFile: newer, encoding: .utf8) == "newer local b")
        #expect(world.server.bodyBytesSent(to: "/b.bin") == 0)
        // Without -N an -o that exists is refused as before: nothing is overwritten.
        let plain = try await HaulProcess.run(["get", "-o", "b.bin", world.server.url("/a.bin")], in: world)
        #expect(plain.status == 6)
        #expect(try String(contentsOfFile: newer, encoding: .utf8) == "newer local b")
        try await world.close()
    }

    @Test func remoteTimeSetsTheServersTime() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2123, length: 200_000)
        world.server.setRoute("/r.bin", Route(payload: payload, lastModified: november2))
        world.server.setRoute("/plain.bin", Route(payload: payload, lastModified: november2))
        let run = try await HaulProcess.run(["get", "--remote-time", world.server.url("/r.bin")], in: world)
        let plain = try await HaulProcess.run(["get", world.server.url("/plain.bin")], in: world)
        #expect(run.status == 0 && plain.status == 0, "\(run.stderr) \(plain.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/r.bin") == nil)
        #expect(try modified(world.directory + "/r.bin") == november2Seconds)
        #expect(
            try modified(world.directory + "/plain.bin") > november2Seconds,
            "without the flag, the time of the download")
        try await world.close()
    }

    /// A newer file cut by kill -9: the old file stays whole beside the `.part`; the same command
    /// resumes the `.part` (no If-Modified-Since: its bytes already say the server's is newer)
    /// and only then replaces the old file.
    @Test func theOldFileStaysUntilTheNewOneIsComplete() async throws {
        let world = try await World.make()
        let old = Payload(seed: 2124, length: 300_000)
        let new = Payload(seed: 2125, length: 2_000_000)
        world.server.setRoute("/k.bin", Route(payload: old, lastModified: november1))
        let path = world.directory + "/k.bin"
        let command = [
            "get", "-N", "-q", "-x", "1", "--checkpoint-interval", "0.05", "-o", "k.bin", world.server.url("/k.bin"),
        ]
        let first = try await HaulProcess.run(command, in: world)
        #expect(first.status == 0, "\(first.stderr)")

        world.server.setRoute(
            "/k.bin",
            Route(
                payload: new, lastModified: november2, throttle: 400_000,
                script: [.stallAfter(new.length / 2)]))
        let cut = try HaulProcess(command, home: world.home, workingDirectory: world.directory)
        // The finished record says old.length; the new run's checkpoints go past it.
        _ = try await world.waitForCheckpoint(beyond: old.length)
        cut.signal(SIGKILL)
        _ = await cut.wait()
        #expect(old.mismatch(inFileAt: path) == nil, "the old file is untouched while the new one is incomplete")
        #expect(world.files() == ["k.bin", "k.bin.part"])

        let before = world.server.requests(to: "/k.bin").count
        world.server.setRoute("/k.bin", Route(payload: new, lastModified: november2))
        let resumed = try await HaulProcess.run(command, in: world)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let requests = world.server.requests(to: "/k.bin")[before...]
        #expect(requests.first.map { $0.rangeStart > 0 && $0.header("If-Modified-Since") == nil } == true)
        #expect(new.mismatch(inFileAt: path) == nil)
        #expect(try modified(path) == november2Seconds)
        #expect(world.files() == ["k.bin"])
        try await world.close()
    }
}
