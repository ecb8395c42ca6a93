import Foundation
import HaulAPI
import HaulCore
import NIOHTTP1
import Testing

/// A repository's tree as the Hub lists it, beneath `-d` (and the daemon's directory): dot files
/// and dot folders kept as given (every repository on the Hub has a `.gitattributes`), compared
/// with the tree huggingface_hub's `snapshot_download(local_dir=...)` writes; a listed path no
/// file beneath a directory can have is skipped with one line naming it, the rest fetched.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: HubServer.available, "needs .build-venv/hf with huggingface_hub (.ci/run makes it)"))
struct HubTreeEndToEndTests {
    /// `haul get -d DIR hf://haul-test/dots` writes the tree huggingface_hub writes (its
    /// `.cache/` aside): `.gitattributes`, `.github/workflows/x.yml`, `.ipynb_checkpoints/a.txt`.
    @Test func dotFilesAndDotFoldersAreTheRepositorysTree() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            ["get", "-q", "-d", "haul", "hf://haul-test/dots"], in: world, environment: hub.environment())
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let theirs = world.directory + "/hub"
        let download = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "local", theirs, "haul-test/dots"],
            environment: hub.environment())
        #expect(download.status == 0, "\(download.output)")
        let mine = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "localtree", world.directory + "/haul"])
        let reference = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "localtree", theirs])
        #expect(mine.output == reference.output, "haul: \(mine.output)\nhub: \(reference.output)")
        for path in [".gitattributes", ".github/workflows/x.yml", ".ipynb_checkpoints/a.txt", "config.json"] {
            #expect(
                world.sha256(of: world.directory + "/haul/" + path) == hub.sha256["models/haul-test/dots@main/\(path)"],
                "\(path)")
        }
        try await world.close()
    }

    /// A listed path with a control character, a segment of 251 bytes, `..` or `.` is skipped
    /// with one line naming it; the rest is fetched and haul exits 0.
    @Test func pathsNoFileCanHaveAreSkippedWithOneLineEach() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            ["get", "-q", "-d", "odd", "hf://haul-test/odd"], in: world, environment: hub.environment())
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        let skipped = [
            "bad\\x01name.txt", String(repeating: "x", count: 251) + "/y.txt", "sub/../escape.txt", "sub/./here.txt",
        ]
        #expect(lines.count == skipped.count, "one line each: \(result.stderr)")
        for path in skipped {
            #expect(lines.contains { $0.contains("skipped") && $0.contains("'\(path)'") }, "\(path): \(result.stderr)")
        }
        let found = (FileManager.default.enumerator(atPath: world.directory + "/odd")?.allObjects as? [String] ?? [])
            .sorted()
        #expect(found == [".gitattributes", "ok.txt"], "\(found)")
        try await world.close()
    }

    /// The daemon's add takes the same tree: each file one download at its path, dot files and
    /// dot folders included; a path skipped there is left out, the add answered 201.
    @Test func theDaemonKeepsDotFilesAndSkipsWhatNoFileCanBe() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, environment: hub.environment())
        defer { daemon.process.signal(SIGKILL) }
        for (repository, directory, files) in [
            ("dots", "dots", [".gitattributes", ".github/workflows/x.yml", ".ipynb_checkpoints/a.txt", "config.json"]),
            ("odd", "odd", [".gitattributes", "ok.txt"]),
        ] {
            let answer = try await daemon.call(
                .POST, "/api/v1/downloads",
                body: #"{"url": "hf://haul-test/\#(repository)", "directory": "\#(world.directory)/\#(directory)"}"#)
            #expect(answer.status == 201, "\(answer.text)")
            let added = try answer.decode([DownloadView].self)
            #expect(added.count == files.count, "\(added.map(\.fileName))")
            for view in added { try await daemon.wait(for: view.id, status: .completed) }
            for path in files {
                #expect(
                    world.sha256(of: "\(world.directory)/\(directory)/\(path)")
                        == hub.sha256["models/haul-test/\(repository)@main/\(path)"], "\(path)")
            }
        }
        _ = await daemon.terminate()
        try await world.close()
    }

    /// Issue 45: one LFS blob at two paths (`a/weights.bin`, `b/weights.bin`) is fetched once, in
    /// tree mode and through the daemon's add: the listing names each file's digest before any
    /// request, the second path waits for the first (the queue's twins) and copies its file. One
    /// connection a file (`-x 1`, and the daemon's default), so the CDN's bytes count the fetches
    /// alone: a steal between connections asks again bytes already in flight to the one it
    /// shortens, and the fixture's server counts those as sent.
    @Test func oneBlobAtTwoPathsIsFetchedOnce() async throws {
        let hub = try await HubServer.shared()
        let blob = try #require(hub.sha256["models/haul-test/twins@main/a/weights.bin"])
        #expect(blob == hub.sha256["models/haul-test/twins@main/b/weights.bin"])
        let world = try await World.make()
        var sent = try await hub.stats().cdnBytes[blob] ?? 0
        let result = try await HaulProcess.run(
            ["get", "-q", "-x", "1", "-d", "twins", "hf://haul-test/twins"], in: world, environment: hub.environment())
        #expect(result.status == 0, "\(result.stderr)")
        for path in ["a/weights.bin", "b/weights.bin", "other.bin"] {
            #expect(
                world.sha256(of: world.directory + "/twins/" + path)
                    == hub.sha256["models/haul-test/twins@main/\(path)"],
                "\(path)")
        }
        var now = try await hub.stats().cdnBytes[blob] ?? 0
        #expect(now - sent == 2 << 20, "haul get: the 2 MiB blob once")
        sent = now
        let daemon = try await DaemonProcess.start(world, environment: hub.environment())
        defer { daemon.process.signal(SIGKILL) }
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "hf://haul-test/twins", "directory": "\#(world.directory)/daemon"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        for view in try answer.decode([DownloadView].self) {
            try await daemon.wait(for: view.id, status: .completed)
        }
        for path in ["a/weights.bin", "b/weights.bin"] {
            #expect(world.sha256(of: world.directory + "/daemon/" + path) == blob, "\(path)")
        }
        now = try await hub.stats().cdnBytes[blob] ?? 0
        #expect(now - sent == 2 << 20, "the daemon: the 2 MiB blob once")
        _ = await daemon.terminate()
        try await world.close()
    }
}
