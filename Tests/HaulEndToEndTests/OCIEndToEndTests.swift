import Foundation
import HaulAPI
import HaulCore
import NIOHTTP1
import Testing

/// `haul get oci://...` against a real registry: Debian's docker-registry, started by
/// `Tests/OCI/registry_fixture.py` with images pushed through its API; what haul writes is read
/// by skopeo and unpacked by umoci. `.ci/run` installs all three; elsewhere the suite runs when
/// they are on the PATH.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: Registry.available, "needs docker-registry, skopeo and umoci (.ci/run installs them)"))
struct OCIEndToEndTests {
    /// An index narrowed to linux/arm64: the layout's index names that platform's manifest,
    /// skopeo copies the image out of the layout (checking every digest) and umoci unpacks it.
    @Test func anIndexBecomesALayoutSkopeoAndUmociRead() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "layout", "--platform", "linux/arm64", registry.name("haul/app:v1")],
            in: world)
        #expect(result.status == 0, "\(result.stderr)")
        let layout = world.directory + "/layout"
        let index = try String(contentsOfFile: layout + "/index.json", encoding: .utf8)
        #expect(index.contains(registry.digests["haul/app:v1@linux/arm64"]!), "\(index)")
        #expect(index.contains(#""org.opencontainers.image.ref.name":"v1""#), "\(index)")
        #expect(try String(contentsOfFile: layout + "/oci-layout", encoding: .utf8).contains("1.0.0"))
        let copy = try Tools.run("skopeo", ["copy", "oci:\(layout):v1", "dir:\(world.directory)/copied"])
        #expect(copy.status == 0, "\(copy.output)")
        let unpack = try Tools.run(
            "umoci", ["unpack", "--rootless", "--image", "\(layout):v1", world.directory + "/bundle"])
        #expect(unpack.status == 0, "\(unpack.output)")
        let unpacked = try FileManager.default.attributesOfItem(
            atPath: world.directory + "/bundle/rootfs/opt/arm64.bin")
        #expect((unpacked[.size] as? Int) == 24 << 20)
        try await world.close()
    }

    /// A second image goes into the same layout beside the first; the layer they share is found
    /// in place by its digest and not fetched again.
    @Test func twoImagesShareOneLayoutAndTheSharedLayerIsNotFetchedTwice() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let first = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "layout", "--platform", "linux/amd64", registry.name("haul/app:v1")],
            in: world)
        #expect(first.status == 0, "\(first.stderr)")
        let blobs = world.directory + "/layout/blobs/sha256"
        let before = try Dictionary(
            uniqueKeysWithValues: FileManager.default.contentsOfDirectory(atPath: blobs).map {
                ($0, try FileManager.default.attributesOfItem(atPath: blobs + "/" + $0)[.systemFileNumber] as? Int)
            })
        let second = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "layout", registry.name("haul/small")], in: world)
        #expect(second.status == 0, "\(second.stderr)")
        let index = try String(contentsOfFile: world.directory + "/layout/index.json", encoding: .utf8)
        #expect(
            index.contains(#""org.opencontainers.image.ref.name":"v1""#) && index.contains(#":"latest""#), "\(index)")
        for (name, inode) in before {
            let now = try FileManager.default.attributesOfItem(atPath: blobs + "/" + name)[.systemFileNumber] as? Int
            #expect(now == inode, "\(name) was not written again")
        }
        for tag in ["v1", "latest"] {
            let copy = try Tools.run(
                "skopeo", ["copy", "oci:\(world.directory)/layout:\(tag)", "dir:\(world.directory)/\(tag)"])
            #expect(copy.status == 0, "\(tag): \(copy.output)")
        }
        try await world.close()
    }

    /// `kill -9` in the middle of the 24 MiB layer, then the same command: the layer resumes,
    /// and the layout is written only once every blob is in.
    @Test func aKilledPullResumesAndWritesTheLayoutLast() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let name = registry.name("haul/app:v1")
        let first = try HaulProcess(
            [
                "get", "-q", "--plain-http", "-d", "layout", "--platform", "linux/arm64", "-x", "1", "--limit-rate",
                "2M", "--checkpoint-interval", "0.05", name,
            ], home: world.home, workingDirectory: world.directory)
        // The big layer's checkpoint (the config and the small layer are done at once).
        for _ in 0..<2400 {
            let records = (try? await world.storedRecords()) ?? []
            if records.contains(where: { $0.completedLength > 1 << 20 && $0.status != .completed }) { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/layout/index.json"), "not before the blobs")
        let second = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "layout", "--platform", "linux/arm64", name], in: world)
        #expect(second.status == 0, "\(second.stderr)")
        let copy = try Tools.run(
            "skopeo", ["copy", "oci:\(world.directory)/layout:v1", "dir:\(world.directory)/copied"])
        #expect(copy.status == 0, "\(copy.output)")
        try await world.close()
    }

    /// The layout's `index.json` cannot be written (a folder holds its name): every blob is in,
    /// but the pull fails with one line and exit 6, and no `index.json` claims an image. Once the
    /// folder is gone, the same command fetches nothing (every blob is in place by its digest)
    /// and writes the index: a group of no download still gets its finish.
    @Test func aLayoutThatCannotBeWrittenFailsThePullAndTheNextRunWritesItWithoutFetching() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let layout = world.directory + "/layout"
        try FileManager.default.createDirectory(
            atPath: layout + "/index.json/in-the-way", withIntermediateDirectories: true)
        let arguments = [
            "get", "--plain-http", "-d", "layout", "--platform", "linux/arm64", registry.name("haul/app:v1"),
        ]
        let first = try await HaulProcess.run(arguments, in: world)
        #expect(first.status == 6, "\(first.stderr)")
        let lines = first.stderr.split(separator: "\n").filter { $0.contains("cannot complete") }
        #expect(lines.count == 1, "\(first.stderr)")
        let blobs = layout + "/blobs/sha256"
        let fetched = try FileManager.default.contentsOfDirectory(atPath: blobs)
        #expect(fetched.count >= 3, "the config, the layers and the manifest are in: \(fetched)")
        let inodes = try fetched.map {
            try FileManager.default.attributesOfItem(atPath: blobs + "/" + $0)[.systemFileNumber] as? Int
        }
        try FileManager.default.removeItem(atPath: layout + "/index.json")
        let second = try await HaulProcess.run(arguments, in: world)
        #expect(second.status == 0, "\(second.stderr)")
        let index = try String(contentsOfFile: layout + "/index.json", encoding: .utf8)
        #expect(index.contains(registry.digests["haul/app:v1@linux/arm64"]!), "\(index)")
        let after = try fetched.map {
            try FileManager.default.attributesOfItem(atPath: blobs + "/" + $0)[.systemFileNumber] as? Int
        }
        #expect(after == inodes, "no blob was fetched again")
        let copy = try Tools.run("skopeo", ["copy", "oci:\(layout):v1", "dir:\(world.directory)/copied"])
        #expect(copy.status == 0, "\(copy.output)")
        try await world.close()
    }

    /// The daemon takes `oci://` names through its API and aria2's `addUri`: one download per
    /// blob, and the layout's `index.json` written once the last one is in, by the daemon that
    /// sees it complete. A `kill -9` of the daemon mid-layer leaves no `index.json`; the next
    /// daemon resumes the layer and then writes it (the finish was kept on disk at the add).
    @Test func theDaemonWritesTheLayoutOnceEveryBlobIsInAcrossARestart() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let layout = world.directory + "/layout"
        let options = ["--plain-http", "--platform", "linux/arm64"]
        let slow = try await DaemonProcess.start(
            world, options + ["--limit-rate", "2M", "--checkpoint-interval", "0.05"])
        let answer = try await slow.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "\#(registry.name("haul/app:v1"))", "directory": "\#(layout)"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode([DownloadView].self)
        #expect(added.count == 3, "the config and two layers: \(answer.text)")
        for _ in 0..<2400 {
            let records = (try? await world.storedRecords()) ?? []
            if records.contains(where: { $0.completedLength > 1 << 20 && $0.status != .completed }) { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        slow.process.signal(SIGKILL)
        #expect(await slow.process.wait() == SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: layout + "/index.json"), "not before the blobs")

        let daemon = try await DaemonProcess.start(world, options)
        defer { daemon.process.signal(SIGKILL) }
        for id in added.map(\.id) { try await daemon.wait(for: id, status: .completed) }
        let call =
            #"{"jsonrpc":"2.0","id":"1","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["\#(registry.name("haul/small"))"],{"dir":"\#(layout)"}]}"#
        let rpc = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        let gid = try #require((rpc.json as? [String: Any])?["result"] as? String, "\(rpc.text)")
        try await daemon.wait(for: gid, status: .completed)
        // Written once the last blob completed, before its outcome is told; a status read may
        // see it completed a moment before: bounded, not timed.
        var index = ""
        for _ in 0..<1200 {
            index = (try? String(contentsOfFile: layout + "/index.json", encoding: .utf8)) ?? ""
            if index.contains(#":"v1""#), index.contains(#":"latest""#) { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(index.contains(#""org.opencontainers.image.ref.name":"v1""#), "\(index)")
        #expect(index.contains(#""org.opencontainers.image.ref.name":"latest""#), "\(index)")
        for tag in ["v1", "latest"] {
            let copy = try Tools.run("skopeo", ["copy", "oci:\(layout):\(tag)", "dir:\(world.directory)/\(tag)"])
            #expect(copy.status == 0, "\(tag): \(copy.output)")
        }
        // Every blob of v1 is in place: addUri says there is nothing to download, but its group
        // still goes in and its finish is written before the answer (index.json comes back).
        try FileManager.default.removeItem(atPath: layout + "/index.json")
        let again =
            #"{"jsonrpc":"2.0","id":"2","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["\#(registry.name("haul/app:v1"))"],{"dir":"\#(layout)"}]}"#
        let inPlace = try await daemon.call(.POST, "/jsonrpc", body: again, token: .some(nil))
        #expect(inPlace.text.contains("already in place"), "\(inPlace.text)")
        let rewritten = try String(contentsOfFile: layout + "/index.json", encoding: .utf8)
        #expect(rewritten.contains(#""org.opencontainers.image.ref.name":"v1""#), "\(rewritten)")
        _ = await daemon.terminate()
        try await world.close()
    }

    /// The daemon cannot write the layout (a folder holds `index.json`'s name): every blob
    /// completes, the group is kept failed with why, `GET /api/v1/groups?state=failed` and `haul
    /// ls` say so. Once the folder is gone, the next start checks it again and writes the index.
    @Test func aFinishTheDaemonCannotWriteIsReportedAndWrittenByTheNextStart() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let layout = world.directory + "/layout"
        try FileManager.default.createDirectory(
            atPath: layout + "/index.json/in-the-way", withIntermediateDirectories: true)
        let options = ["--plain-http", "--platform", "linux/arm64"]
        let daemon = try await DaemonProcess.start(world, options)
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "\#(registry.name("haul/app:v1"))", "directory": "\#(layout)"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode([DownloadView].self)
        for download in added { try await daemon.wait(for: download.id, status: .completed) }
        // Kept failed just after the last download is stored completed: bounded, not timed.
        var failed: [GroupView] = []
        for _ in 0..<1200 {
            failed = try await daemon.call(.GET, "/api/v1/groups?state=failed").decode([GroupView].self)
            if !failed.isEmpty { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(failed.map(\.name) == [registry.name("haul/app:v1")], "\(failed)")
        #expect(failed.first?.members == added.map(\.id))
        #expect(failed.first?.error?.isEmpty == false)
        let listed = try await HaulProcess.run(["ls"], in: world)
        #expect(listed.stdout.contains("finish failed  \(registry.name("haul/app:v1")): "), "\(listed.stdout)")
        let wrong = try await daemon.call(.GET, "/api/v1/groups?state=done")
        #expect(wrong.status == 400, "\(wrong.text)")
        _ = await daemon.terminate()

        try FileManager.default.removeItem(atPath: layout + "/index.json")
        let next = try await DaemonProcess.start(world, options)
        let groups = try await next.call(.GET, "/api/v1/groups").decode([GroupView].self)
        #expect(groups.map(\.state) == [.finished], "\(groups)")
        let index = try String(contentsOfFile: layout + "/index.json", encoding: .utf8)
        #expect(index.contains(registry.digests["haul/app:v1@linux/arm64"]!), "\(index)")
        _ = await next.terminate()
        try await world.close()
    }

    /// A registry behind a password: refused without credentials (exit 3), fetched with
    /// `--oci-auth` or with Docker's `config.json` (`DOCKER_CONFIG`).
    @Test func aRegistryBehindAPasswordTakesTheUsersCredentials() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let name = "oci://127.0.0.1:\(registry.authPort)/haul/small"
        let refused = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "refused", name], in: world,
            environment: ["DOCKER_CONFIG": world.home + "-no-docker"])
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("--oci-auth"), "\(refused.stderr)")
        let wrong = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "wrong", "--oci-auth", "haul:nope", name], in: world)
        #expect(wrong.status == 3, "\(wrong.stderr)")
        let given = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "given", "--oci-auth", "haul:s3cret", name], in: world)
        #expect(given.status == 0, "\(given.stderr)")
        let docker = world.home + "-docker"
        try FileManager.default.createDirectory(atPath: docker, withIntermediateDirectories: true)
        let auth = Data("haul:s3cret".utf8).base64EncodedString()
        try #"{"auths": {"127.0.0.1:\#(registry.authPort)": {"auth": "\#(auth)"}}}"#.write(
            toFile: docker + "/config.json", atomically: true, encoding: .utf8)
        let fromConfig = try await HaulProcess.run(
            ["get", "-q", "--plain-http", "-d", "config", name], in: world, environment: ["DOCKER_CONFIG": docker])
        #expect(fromConfig.status == 0, "\(fromConfig.stderr)")
        for directory in ["given", "config"] {
            let copy = try Tools.run(
                "skopeo",
                ["copy", "oci:\(world.directory)/\(directory):latest", "dir:\(world.directory)/\(directory)-copy"])
            #expect(copy.status == 0, "\(directory): \(copy.output)")
        }
        try await world.close()
    }

    /// Each refusal is one line and its exit code: a platform the index lacks 2, an unknown tag 3,
    /// TLS to a registry without it 4 (saying --plain-http), a bad name 2; no layout is written.
    @Test func refusalsAreOneLineWithTheirExitCodes() async throws {
        let registry = try await Registry.shared()
        let world = try await World.make()
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["--plain-http", "--platform", "linux/s390x", registry.name("haul/app:v1")], 2, "has no linux/s390x"),
            (["--plain-http", registry.name("haul/app:nope")], 3, "no such image"),
            (["--plain-http", registry.name("haul/absent:v1")], 3, "no such image"),
            ([registry.name("haul/app:v1")], 4, "--plain-http"),
            (["oci://127.0.0.1/UPPER/case"], 2, "bad image name"),
            (["--plain-http", "--platform", "linux", registry.name("haul/app:v1")], 2, "--platform"),
        ]
        for item in cases {
            let result = try await HaulProcess.run(["get", "-q", "-d", "layout"] + item.arguments, in: world)
            #expect(result.status == item.status, "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.contains(item.says), "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/layout/index.json"))
        try await world.close()
    }
}

/// Programs the OCI tests run: skopeo, umoci.
enum Tools {
    static func path(_ name: String) -> String? {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin"]
        where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
            return directory + "/" + name
        }
        return nil
    }

    /// Runs to the end; its status and its output and errors together.
    static func run(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path(name) ?? name)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// Debian's docker-registry with the test images, run by `Tests/OCI/registry_fixture.py` until
/// its standard input closes.
struct Registry {
    static var available: Bool {
        ["docker-registry", "skopeo", "umoci"].allSatisfy { Tools.path($0) != nil }
    }

    let fixture: PythonFixture
    let port: Int
    /// The same images behind a password (user `haul`, password `s3cret`).
    let authPort: Int
    /// The manifests' digests by name (`haul/app:v1@linux/arm64`).
    let digests: [String: String]

    /// `oci://127.0.0.1:PORT/NAME`.
    func name(_ image: String) -> String { "oci://127.0.0.1:\(port)/\(image)" }

    /// One registry for the whole suite (pushing the images costs seconds of CPU each time); it
    /// ends with the test process. No test changes what it serves.
    static func shared() async throws -> Registry { try await started.value }
    private static let started = Task { try await Registry.start() }

    static func start() async throws -> Registry {
        struct Ready: Decodable {
            let port: Int
            let authPort: Int
            let digests: [String: String]
        }
        let (fixture, ready) = try await PythonFixture.start(
            python: "/usr/bin/python3", script: "Tests/OCI/registry_fixture.py", as: Ready.self)
        return Registry(fixture: fixture, port: ready.port, authPort: ready.authPort, digests: ready.digests)
    }

}
