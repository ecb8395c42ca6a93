import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// `--sequential` through the real binary: `haul get`, the daemon's REST add and options, and
/// aria2's `stream-piece-selector`. What is counted: the order of requests at the server and the
/// contiguous prefix of the `.part` while the download runs.
@Suite(.timeLimit(.minutes(3))) struct SequentialEndToEndTests {
    /// A paced 12 MiB file over 4 connections, pieces of 256 KiB: the first request is the first
    /// piece, the last piece is among the first four, and at every look at the `.part` while it
    /// downloads, the bytes it holds (the tail aside) end at most 4 x 4 x 256 KiB past its
    /// contiguous prefix, plus the one batch a connection may still hold. The file is byte-exact.
    @Test func aSequentialGetFillsThePartFromTheFront() async throws {
        let world = try await World.make()
        let piece: Int64 = 256 << 10
        let total: Int64 = 12 << 20
        let payload = Payload(seed: 4901, length: total)
        world.server.setRoute("/movie.mp4", Route(payload: payload, throttle: 1 << 20))
        let process = try HaulProcess(
            ["get", world.server.url("/movie.mp4"), "--sequential", "-x", "4", "-k", "256K"], home: world.home,
            workingDirectory: world.directory)
        let part = world.directory + "/movie.mp4.part"
        let tail = total - piece
        let block: Int64 = 64 << 10
        // Compared as `Data` (memcmp): a byte loop over 12 MiB every look took a core of a
        // debug build from the tests running beside this one.
        let expected = (0..<(total / block)).map { Data(payload.bytes(($0 * block)..<(($0 + 1) * block))) }
        var looks = 0
        var worst: Int64 = 0
        while process.process.isRunning {
            if let data = FileManager.default.contents(atPath: part) {
                // Blocks equal to the payload's: the prefix ends at the first that is not; the
                // holdings end after the last one before the tail.
                var prefix: Int64 = 0
                var held: Int64 = 0
                for index in 0..<Int(tail / block) {
                    let start = Int64(index) * block
                    guard start + block <= Int64(data.count) else { break }
                    let same = data.subdata(in: Int(start)..<Int(start + block)) == expected[index]
                    if same, prefix == start { prefix = start + block }
                    if same { held = start + block }
                }
                worst = max(worst, held - prefix)
                looks += 1
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(await process.wait() == 0, "\(process.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/movie.mp4") == nil)
        #expect(looks > 0)
        // The lead, and the batch a connection still fills in memory (512 KiB at -x 4): a piece
        // goes to the disk as it ends, the bytes of one still arriving in batches.
        #expect(worst <= 4 * 4 * piece + (512 << 10), "the prefix trailed by \(worst) bytes")
        let starts = world.server.requests(to: "/movie.mp4").map(\.rangeStart)
        // The first piece, then the last among the first -x requests (the connections open
        // together, so the server may see a window's request before the tail's).
        #expect(starts.first == 0, "\(starts)")
        #expect(starts.prefix(4).contains(tail), "\(starts)")
        try await world.close()
    }

    /// A `kill -9` mid-way: the next `haul get --sequential` takes up the stored windows and asks
    /// for none of the bytes the store held; the file is byte-exact.
    @Test func aKilledSequentialGetResumesWithoutFetchingWhatItHeld() async throws {
        let world = try await World.make()
        let total: Int64 = 12 << 20
        let payload = Payload(seed: 4904, length: total)
        world.server.setRoute("/shard.safetensors", Route(payload: payload, throttle: 512 << 10))
        let arguments = [
            "get", world.server.url("/shard.safetensors"), "--sequential", "-x", "4", "-k", "256K", "--quiet",
        ]
        let first = try HaulProcess(arguments, home: world.home, workingDirectory: world.directory)
        _ = try await world.waitForCheckpoint(beyond: 1 << 20)
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        let stored = try #require(try await world.storedRecord())
        #expect(stored.request.sequential)
        let held = stored.segments.filter { $0.written > 0 }.map { $0.start..<($0.start + $0.written) }
        #expect(!held.isEmpty)
        world.server.setRoute("/shard.safetensors", Route(payload: payload))
        let asked = world.server.requests(to: "/shard.safetensors").count
        let second = try await HaulProcess.run(arguments, in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/shard.safetensors") == nil)
        // Requests of the second run start past what the store held, never inside it.
        let starts = world.server.requests(to: "/shard.safetensors").dropFirst(asked).map(\.rangeStart)
        #expect(!starts.isEmpty)
        for start in starts {
            #expect(!held.contains { $0.contains(start) }, "asked again from \(start): held \(held)")
        }
        try await world.close()
    }

    /// The daemon: `haul serve --sequential` makes it the default (shown by the options and by
    /// aria2's `getGlobalOption`), an add may say otherwise, each download shows its own
    /// (`sequential` in the REST view, `stream-piece-selector` in `getOption`), and
    /// `changeGlobalOption` and `PUT /api/v1/options` change the default. A wrong value is refused.
    @Test func theDaemonTakesItAsADefaultAndPerAdd() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: Payload(seed: 4902, length: 1 << 20)))
        world.server.setRoute("/b.bin", Route(payload: Payload(seed: 4903, length: 1 << 20)))
        let daemon = try await DaemonProcess.start(world, ["--sequential"])
        defer { daemon.process.signal(SIGKILL) }
        let options = try await daemon.call(.GET, "/api/v1/options")
        #expect((options.json as? [String: Any])?["sequential"] as? Bool == true, "\(options.text)")
        let byDefault = try await daemon.call(
            .POST, "/api/v1/downloads", body: #"{"url": "\#(world.server.url("/a.bin"))"}"#)
        #expect(try byDefault.decode(DownloadView.self).sequential, "\(byDefault.text)")
        let plain = try await daemon.call(
            .POST, "/api/v1/downloads", body: #"{"url": "\#(world.server.url("/b.bin"))", "sequential": false}"#)
        let plainView = try plain.decode(DownloadView.self)
        #expect(!plainView.sequential)
        // aria2: the download's own and the default.
        let secret = daemon.serve.secret
        let got = try await daemon.call(
            .POST, "/jsonrpc",
            body:
                #"{"jsonrpc":"2.0","id":1,"method":"aria2.getOption","params":["token:\#(secret)","\#(plainView.id)"]}"#
        )
        #expect(got.text.contains(#""stream-piece-selector":"default""#), "\(got.text)")
        let global = try await daemon.call(
            .POST, "/jsonrpc",
            body: #"{"jsonrpc":"2.0","id":2,"method":"aria2.getGlobalOption","params":["token:\#(secret)"]}"#)
        #expect(global.text.contains(#""stream-piece-selector":"inorder""#), "\(global.text)")
        let changed = try await daemon.call(
            .POST, "/jsonrpc",
            body: #"""
                {"jsonrpc":"2.0","id":3,"method":"aria2.changeGlobalOption","params":["token:\#(secret)",{"stream-piece-selector":"default"}]}
                """#)
        #expect(changed.text.contains(#""result":"OK""#), "\(changed.text)")
        let after = try await daemon.call(.GET, "/api/v1/options")
        #expect((after.json as? [String: Any])?["sequential"] as? Bool == false, "\(after.text)")
        let put = try await daemon.call(.PUT, "/api/v1/options", body: #"{"sequential": true}"#)
        #expect((put.json as? [String: Any])?["sequential"] as? Bool == true, "\(put.text)")
        let added = try await daemon.call(
            .POST, "/jsonrpc",
            body: #"""
                {"jsonrpc":"2.0","id":4,"method":"aria2.addUri","params":["token:\#(secret)",["\#(world.server.url("/a.bin"))"],{"stream-piece-selector":"sideways"}]}
                """#)
        #expect(added.text.contains("stream-piece-selector"), "\(added.text)")
        #expect(added.text.contains(#""error""#), "\(added.text)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }
}
