import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// The real binaries against links planted in and above their download directories (issue 19):
/// `haul serve` through its API and aria2's JSON-RPC, and `haul get -o/-d`. Beside the
/// download directory, `outside/victim.txt` must stay as it was, and no final name may link
/// out.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ConfinementEndToEndTests {
    let payload = Payload(seed: 91, length: 300_000)

    /// `outside/victim.txt` next to the world's download directory.
    private func victim(_ world: World) throws -> String {
        let outside = (world.directory as NSString).deletingLastPathComponent + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside + "/victim.txt"))
        return outside + "/victim.txt"
    }

    private func intact(_ path: String) -> Bool {
        (try? String(contentsOfFile: path, encoding: .utf8)) == "precious"
    }

    private func plantPartLink(_ world: World, name: String) throws {
        try FileManager.default.createSymbolicLink(
            atPath: world.directory + "/" + name + ".part",
            withDestinationPath: "../outside/victim.txt")
    }

    @Test func theAPIsExplicitNameWithAPlantedPartLinkFails() async throws {
        let world = try await World.make()
        let victim = try victim(world)
        world.server.setRoute("/x.bin", Route(payload: payload))
        try plantPartLink(world, name: "name.bin")
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "\#(world.server.url("/x.bin"))", "fileName": "name.bin"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode(DownloadView.self)
        let failed = try await daemon.wait(for: added.id, status: .failed)
        #expect(failed.error?.code == "forbidden", "\(String(describing: failed.error))")
        #expect(intact(victim))
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/name.bin"))
        try await world.close()
    }

    @Test func aria2sOutWithAPlantedPartLinkFails() async throws {
        let world = try await World.make()
        let victim = try victim(world)
        world.server.setRoute("/x.bin", Route(payload: payload))
        try plantPartLink(world, name: "out.bin")
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let call =
            #"{"jsonrpc":"2.0","id":"1","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["\#(world.server.url("/x.bin"))"],{"out":"out.bin"}]}"#
        let answer = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        let gid = try #require((answer.json as? [String: Any])?["result"] as? String, "\(answer.text)")
        let failed = try await daemon.wait(for: gid, status: .failed)
        #expect(failed.error?.code == "forbidden", "\(String(describing: failed.error))")
        #expect(intact(victim))
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/out.bin"))
        try await world.close()
    }

    @Test func aQueuedDownloadsDirectoryReplacedByALinkFails() async throws {
        let world = try await World.make()
        _ = try victim(world)
        let target = (world.directory as NSString).deletingLastPathComponent + "/outside/x"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        world.server.setRoute("/slow.bin", Route(payload: Payload(seed: 92, length: 4_000_000), throttle: 200_000))
        world.server.setRoute("/later.bin", Route(payload: payload))
        let daemon = try await DaemonProcess.start(world, ["-j", "1"])
        defer { daemon.process.signal(SIGKILL) }
        let busy = try await daemon.add(world.server.url("/slow.bin"))
        _ = try await daemon.wait(for: busy.id, status: .running)
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "\#(world.server.url("/later.bin"))", "directory": "\#(world.directory)/later"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let queued = try answer.decode(DownloadView.self)
        #expect(queued.status == .queued)
        try FileManager.default.createSymbolicLink(
            atPath: world.directory + "/later", withDestinationPath: "../outside/x")
        #expect(try await daemon.call(.POST, "/api/v1/downloads/\(busy.id)/pause").status == 200)
        let failed = try await daemon.wait(for: queued.id, status: .failed)
        #expect(failed.error?.code == "forbidden", "\(String(describing: failed.error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
        #expect(world.server.requests(to: "/later.bin").isEmpty)
        try await world.close()
    }

    @Test func haulGetWithAPlantedPartLinkExitsForbidden() async throws {
        let world = try await World.make()
        let victim = try victim(world)
        world.server.setRoute("/x.bin", Route(payload: payload))
        try plantPartLink(world, name: "out.bin")
        let run = try await HaulProcess.run(
            ["get", "--quiet", "-o", world.directory + "/out.bin", world.server.url("/x.bin")], in: world)
        #expect(run.status == 10, "\(run.stderr)")
        #expect(run.stderr.contains("symbolic link"), "\(run.stderr)")
        #expect(intact(victim))
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/out.bin"))
        try await world.close()
    }

    @Test func aContentDispositionNameWithAPlantedPartLinkTakesAnotherName() async throws {
        let world = try await World.make()
        let victim = try victim(world)
        world.server.setRoute("/x", Route(payload: payload, contentDisposition: "attachment; filename=\"cd.bin\""))
        try plantPartLink(world, name: "cd.bin")
        let run = try await HaulProcess.run(
            ["get", "--quiet", "-d", world.directory, world.server.url("/x")], in: world)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/cd.1.bin") == nil)
        #expect(intact(victim))
        try await world.close()
    }
}
