import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// `haul get` and `haul serve` read $XDG_CONFIG_HOME/haul/config (or --config FILE): the file's
/// options count as given, the command line wins over them, and a bad line stops everything
/// with its file and line named.
@Suite(.timeLimit(.minutes(2))) struct ConfigFileTests {
    static func writeConfig(_ text: String, in world: World) throws -> String {
        let directory = world.home + "-config/haul"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try text.write(toFile: directory + "/config", atomically: true, encoding: .utf8)
        return directory + "/config"
    }

    @Test func theFilesOptionsApplyAndTheCommandLineWins() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 77, length: 50_000)
        world.server.setRoute("/c.bin", Route(payload: payload))
        _ = try Self.writeConfig(
            """
            # comments and blank lines are skipped

            x = 2
            [get]
            header=X-From-File: yes
            user-agent=from-the-file
            quiet=true
            [serve]
            j=5
            """, in: world)
        let got = try await HaulProcess.run(
            ["get", "--user-agent", "from-the-command-line", "-H", "X-From-CLI: yes", world.server.url("/c.bin")],
            in: world)
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stderr.isEmpty, "quiet=true from the file: \(got.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/c.bin") == nil)
        let request = try #require(world.server.requests(to: "/c.bin").first)
        #expect(request.header("User-Agent") == "from-the-command-line")
        #expect(request.header("X-From-File") == "yes")
        #expect(request.header("X-From-CLI") == "yes")

        // --no-config: none of it.
        let bare = try await HaulProcess.run(
            ["get", "--no-config", "-o", "bare.bin", world.server.url("/c.bin")], in: world)
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(world.server.requests(to: "/c.bin").last?.header("X-From-File") == nil)

        // haul serve takes its section: -j 5 counts as given.
        let daemon = try await DaemonProcess.start(world)
        let options = try await daemon.call(.GET, "/api/v1/options").json as? [String: Any]
        #expect(options?["maxConcurrentDownloads"] as? Int == 5)
        #expect(options?["connections"] as? Int == 2, "x=2 before any section applies to serve too")
        daemon.process.signal(SIGKILL)
        _ = await daemon.process.wait()
        try await world.close()
    }

    @Test(arguments: [
        ("[get]\nx=4\nnot-an-option=1\n", ":3: unknown option 'not-an-option'"),
        (
            "header=X-A: 1\n",
            ":1: unknown option 'header' for haul serve (keys before any section apply to both haul get and haul serve)"
        ),
        ("[get]\nx=many\n", ":2: -x many: "),
        ("[download]\n", ":1: unknown section '[download]'"),
        ("[get]\nquiet=maybe\n", ":2: quiet is a flag: true or false, not 'maybe'"),
        ("[get]\njust words\n", ":2: expected name=value"),
        ("[get]\nuser-agent-file=/nonexistent/agent\n", ":2: user-agent-file: cannot read /nonexistent/agent"),
        ("config=/etc/other\n", ":1: 'config' cannot be set in a configuration file"),
    ])
    func aBadLineIsOneLineNamingItAndNothingStarts(text: String, message: String) async throws {
        let world = try await World.make()
        world.server.setRoute("/n.bin", Route(payload: Payload(seed: 1, length: 1000)))
        let path = try Self.writeConfig(text, in: world)
        let got = try await HaulProcess.run(["get", world.server.url("/n.bin")], in: world)
        #expect(got.status == 2)
        #expect(
            got.stderr == "haul: \(path)\(message)" || got.stderr.hasPrefix("haul: \(path)\(message)"), "\(got.stderr)")
        #expect(got.stderr.split(separator: "\n").count == 1, "\(got.stderr)")
        #expect(world.server.requests(to: "/n.bin").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/n.bin"))
        try await world.close()
    }

    @Test func anUnreadableGivenFileIsAnErrorAndAMissingDefaultIsNot() async throws {
        let world = try await World.make()
        world.server.setRoute("/m.bin", Route(payload: Payload(seed: 2, length: 1000)))
        let missing = try await HaulProcess.run(
            ["get", "--config", "/nonexistent/haul.conf", world.server.url("/m.bin")], in: world)
        #expect(missing.status == 2)
        #expect(
            missing.stderr
                == "haul: /nonexistent/haul.conf: cannot read the configuration file: No such file or directory\n")
        let none = try await HaulProcess.run(["get", world.server.url("/m.bin")], in: world)
        #expect(none.status == 0, "\(none.stderr)")
        try await world.close()
    }

    @Test func aSecretComesFromItsFile() async throws {
        let world = try await World.make()
        let secretPath = world.directory + "/../token"
        try "s3cr3t-from-a-file\n".write(toFile: secretPath, atomically: true, encoding: .utf8)
        _ = try Self.writeConfig("[serve]\nsecret-file=\(secretPath)\n", in: world)
        let daemon = try await DaemonProcess.start(world)
        #expect(daemon.serve.secret == "s3cr3t-from-a-file")
        daemon.process.signal(SIGKILL)
        _ = await daemon.process.wait()
        try await world.close()
    }
}
