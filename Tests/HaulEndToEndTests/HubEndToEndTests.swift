import AsyncHTTPClient
import Foundation
import HaulAPI
import HaulCore
import NIOCore
import NIOHTTP1
import Testing

/// `haul get hf://...` against a Hub of our own (`Tests/HF/hub_server.py`: the revision API,
/// `/resolve/` with its headers and a redirect to a second host acting as the CDN, with signed
/// URLs that expire), checked against huggingface_hub itself (`Tests/HF/hub_client.py`, from
/// `.build-venv/hf`, which `.ci/run` makes): the cache haul writes with `--hf-cache` is the tree
/// huggingface_hub writes, and huggingface_hub finds haul's files with the network off.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: HubServer.available, "needs .build-venv/hf with huggingface_hub (.ci/run makes it)"))
struct HubEndToEndTests {
    /// The repository's tree under `-d`, every file byte-exact; the token went to the Hub and
    /// never to the CDN; signed CDN URLs that live two seconds never stop a download that takes
    /// several (each request asks the Hub again).
    @Test func aRepositorysTreeWithItsTokenKeptFromTheCDN() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            ["get", "-q", "-d", "tree", "-x", "4", "-k", "1M", "--limit-rate", "8M", "hf://haul-test/model"], in: world,
            environment: hub.environment(token: true))
        #expect(result.status == 0, "\(result.stderr)")
        for path in ["config.json", "model-00001-of-00002.safetensors", "big.bin", "sub/dir/notes.txt"] {
            #expect(
                world.sha256(of: world.directory + "/tree/" + path)
                    == hub.sha256["models/haul-test/model@main/\(path)"],
                "\(path)")
        }
        let stats = try await hub.stats()
        #expect(stats.cdnAuthorization == 0, "the CDN never saw the token")
        #expect((stats.cdn[hub.sha256["models/haul-test/model@main/big.bin"]!] ?? 0) > 1, "big.bin in several requests")
        try await world.close()
    }

    /// A repository's files run all at once (six here) unless `-j` says otherwise: they share
    /// one host, and three then a lone last one was a third slower through the latency relay.
    @Test func aRepositorysFilesRunAtOnceUnlessJobsAreGiven() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        for (extra, limit) in [([String](), 6), (["-j", "2"], 2)] {
            let result = try await HaulProcess.run(
                ["get", "-v", "-d", "tree-\(limit)", "hf://haul-test/model"] + extra, in: world,
                environment: hub.environment())
            #expect(result.status == 0, "\(result.stderr)")
            let starts = result.stderr.split(separator: "\n").filter { $0.contains("a run starts") }
            #expect(starts.count == 6 && starts.allSatisfy { $0.contains("limit=\(limit) ") }, "\(starts)")
        }
        try await world.close()
    }

    /// `kill -9` in the middle of a shard, then the same command after a reboot (a new boot id:
    /// progress noted without fsync is not trusted): the tree ends byte-exact, and no file that
    /// was complete before the kill is asked of the CDN again.
    @Test func aKillMidShardThenARebootFetchesNoFinishedFileAgain() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let arguments = ["get", "-q", "-d", "tree", "-j", "1", "-x", "1", "hf://haul-test/model"]
        let first = try HaulProcess(
            arguments + ["--limit-rate", "2M", "--checkpoint-interval", "0.05", "--boot-id", "before"],
            home: world.home, workingDirectory: world.directory, environment: hub.environment())
        var records: [DownloadRecord] = []
        for _ in 0..<2400 {
            records = (try? await world.storedRecords()) ?? []
            let midShard = records.contains { $0.status == .running && $0.completedLength > 1 << 20 }
            if midShard,
                records.contains(where: { $0.status == .completed && $0.request.checksum?.algorithm == .sha256 })
            {
                break
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        records = try await world.storedRecords()
        let done = records.filter { $0.status == .completed }.compactMap { $0.request.checksum }
            .filter { $0.algorithm == .sha256 }.map(\.hex)
        #expect(!done.isEmpty && records.contains { $0.status != .completed }, "killed mid-repository")
        let before = try await hub.stats().cdn
        let second = try await HaulProcess.run(
            arguments + ["--boot-id", "after"], in: world, environment: hub.environment())
        #expect(second.status == 0, "\(second.stderr)")
        for path in ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "big.bin"] {
            #expect(
                world.sha256(of: world.directory + "/tree/" + path)
                    == hub.sha256["models/haul-test/model@main/\(path)"], "\(path)")
        }
        let after = try await hub.stats().cdn
        for blob in done { #expect(after[blob] == before[blob], "\(blob) was complete: not asked again") }
        try await world.close()
    }

    /// `--hf-cache`: the same tree huggingface_hub writes (blobs by ETag, snapshot links, the
    /// ref), and huggingface_hub in offline mode finds haul's files.
    @Test func theCacheIsHuggingFaceHubsOwn() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let ours = world.directory + "/haul-cache"
        let theirs = world.directory + "/hub-cache"
        let result = try await HaulProcess.run(
            ["get", "-q", "--hf-cache", ours, "hf://haul-test/model"], in: world, environment: hub.environment())
        #expect(result.status == 0, "\(result.stderr)")
        let download = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "download", theirs, "haul-test/model"],
            environment: hub.environment())
        #expect(download.status == 0, "\(download.output)")
        let mine = try await PythonScript.run(python: HubServer.python, ["Tests/HF/hub_client.py", "tree", ours])
        let reference = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "tree", theirs])
        #expect(
            mine.output == reference.output && !mine.output.isEmpty, "haul: \(mine.output)\nhub: \(reference.output)")
        let offline = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "offline", ours, "haul-test/model"],
            environment: hub.environment())
        #expect(offline.status == 0, "\(offline.output)")
        #expect(offline.output.contains(hub.sha256["models/haul-test/model@main/config.json"]!), "\(offline.output)")
        try await world.close()
    }

    /// A file, a folder, a revision, globs and a dataset.
    @Test func pathsRevisionsGlobsAndDatasets() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let cases: [(arguments: [String], files: [String])] = [
            (["hf://haul-test/model/sub/dir/notes.txt"], ["notes.txt"]),
            (["hf://haul-test/model/sub"], ["dir/notes.txt"]),
            (["hf://haul-test/model@v1"], [".gitattributes", "config.json"]),
            (
                ["--include", "*.safetensors", "hf://haul-test/model"],
                [
                    "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                ]
            ),
            (
                ["--exclude", "*.bin", "--exclude", "*.safetensors", "hf://haul-test/model"],
                [".gitattributes", "config.json", "sub/dir/notes.txt"]
            ),
            (["hf://datasets/haul-test/data"], [".gitattributes", "train.csv"]),
        ]
        for (index, item) in cases.enumerated() {
            let result = try await HaulProcess.run(
                ["get", "-q", "-d", "case\(index)"] + item.arguments, in: world, environment: hub.environment())
            #expect(result.status == 0, "\(item.arguments): \(result.stderr)")
            let root = world.directory + "/case\(index)"
            let found = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
                var directory: ObjCBool = false
                return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &directory)
                    && !directory.boolValue
            }.sorted()
            #expect(found == item.files.sorted(), "\(item.arguments): \(found)")
        }
        try await world.close()
    }

    /// The daemon takes `hf://` names through its API and aria2's `addUri`, with its own
    /// `HF_ENDPOINT` and `HF_TOKEN`: one download per file, in the repository's tree.
    @Test func theDaemonTakesHubNames() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, environment: hub.environment(token: true))
        defer { daemon.process.signal(SIGKILL) }
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "hf://haul-test/model/sub", "directory": "\#(world.directory)/api"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode([DownloadView].self)
        let call =
            #"{"jsonrpc":"2.0","id":"1","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["hf://haul-test/gated"]]}"#
        let rpc = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        func status(_ gid: String, on running: DaemonProcess? = nil) async throws -> [String: Any] {
            let running = running ?? daemon
            let call =
                #"{"jsonrpc":"2.0","id":"3","method":"aria2.tellStatus","params":["token:\#(running.serve.secret)","\#(gid)"]}"#
            let answer = try await running.call(.POST, "/jsonrpc", body: call, token: .some(nil))
            return try #require((answer.json as? [String: Any])?["result"] as? [String: Any], "\(answer.text)")
        }
        let gid = try #require((rpc.json as? [String: Any])?["result"] as? String, "\(rpc.text)")
        // The gated repository's first file is its `.gitattributes`; `weights.bin` follows it.
        let gated = try await status(gid)["followedBy"] as? [String] ?? []
        #expect(gated.count == 1, "two files: \(gated)")
        for id in added.map(\.id) + [gid] + gated { try await daemon.wait(for: id, status: .completed) }
        #expect(
            world.sha256(of: world.directory + "/api/dir/notes.txt")
                == hub.sha256["models/haul-test/model@main/sub/dir/notes.txt"])
        #expect(
            world.sha256(of: world.directory + "/weights.bin") == hub.sha256["models/haul-test/gated@main/weights.bin"])
        // A name of several files: addUri answers the first one's gid, whose status lists the
        // others as aria2's `followedBy`; each of them names it as `following`.
        let tree =
            #"{"jsonrpc":"2.0","id":"2","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["hf://haul-test/model"],{"dir":"\#(world.directory)/rpc"}]}"#
        let first = try #require(
            (try await daemon.call(.POST, "/jsonrpc", body: tree, token: .some(nil)).json as? [String: Any])?["result"]
                as? String)
        let followers = try await status(first)["followedBy"] as? [String] ?? []
        #expect(followers.count == 5, "six files: \(followers)")
        for gid in followers {
            #expect(try await status(gid)["following"] as? String == first)
            try await daemon.wait(for: gid, status: .completed)
        }
        #expect(try await status(first)["following"] == nil)
        _ = await daemon.terminate()
        // A restart keeps the links: they are read from the group the state database keeps.
        let again = try await DaemonProcess.start(world, environment: hub.environment(token: true))
        defer { again.process.signal(SIGKILL) }
        #expect(try await status(first, on: again)["followedBy"] as? [String] ?? [] == followers)
        #expect(try await status(followers[0], on: again)["following"] as? String == first)
        // As aria2 (checked against aria2c 1.37 with a Metalink's downloads): removing a result
        // changes no other download's links, the leader's or a member's.
        func removeResult(_ gid: String) async throws {
            let call =
                #"{"jsonrpc":"2.0","id":"4","method":"aria2.removeDownloadResult","params":["token:\#(again.serve.secret)","\#(gid)"]}"#
            let answer = try await again.call(.POST, "/jsonrpc", body: call, token: .some(nil))
            #expect((answer.json as? [String: Any])?["result"] as? String == "OK", "\(answer.text)")
        }
        try await removeResult(followers[0])
        #expect(try await status(first, on: again)["followedBy"] as? [String] ?? [] == followers)
        try await removeResult(first)
        #expect(try await status(followers[1], on: again)["following"] as? String == first)
        _ = await again.terminate()
        try await world.close()
    }

    /// A daemon without a token refuses an add of a gated repository at once, before any file is
    /// asked: REST 403 `forbidden` (never 401, which `haul add` reads as the daemon refusing its
    /// own token), aria2 an error with the same text.
    @Test func theDaemonRefusesAGatedRepositoryWithoutAToken() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, environment: hub.environment())
        defer { daemon.process.signal(SIGKILL) }
        let before = try await hub.stats().resolve["haul-test/gated"] ?? 0
        let says = "hf://haul-test/gated is gated: accept its terms on the Hub and set HF_TOKEN (or --hf-token-file)"
        let answer = try await daemon.call(.POST, "/api/v1/downloads", body: #"{"url": "hf://haul-test/gated"}"#)
        #expect(answer.status == 403, "\(answer.text)")
        let error = (answer.json as? [String: Any])?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "forbidden" && error?["message"] as? String == says, "\(answer.text)")
        let call =
            #"{"jsonrpc":"2.0","id":"1","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["hf://haul-test/gated"]]}"#
        let rpc = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        let rpcError = (rpc.json as? [String: Any])?["error"] as? [String: Any]
        #expect((rpcError?["message"] as? String)?.contains(says) == true, "\(rpc.text)")
        #expect(try await hub.stats().resolve["haul-test/gated"] ?? 0 == before, "no file asked")
        _ = await daemon.terminate()
        try await world.close()
    }

    /// `haul serve --hf-cache DIR`: an add of an `hf://` name fills the Hub's cache, its
    /// snapshot's links and ref made once the last file is in, and huggingface_hub reads it
    /// offline; the tree is the same as `haul get --hf-cache` makes.
    @Test func theDaemonFillsTheHubsCache() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        let cache = world.directory + "/daemon-cache"
        let daemon = try await DaemonProcess.start(world, ["--hf-cache", cache], environment: hub.environment())
        defer { daemon.process.signal(SIGKILL) }
        let answer = try await daemon.call(.POST, "/api/v1/downloads", body: #"{"url": "hf://haul-test/model"}"#)
        #expect(answer.status == 201, "\(answer.text)")
        for view in try answer.decode([DownloadView].self) { try await daemon.wait(for: view.id, status: .completed) }
        // The daemon's observer makes the links once it sees the last completion: bounded, not timed.
        let ref = cache + "/models--haul-test--model/refs/main"
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: ref) {
            try await Task.sleep(for: .milliseconds(25))
        }
        let got = try await HaulProcess.run(
            ["get", "-q", "--hf-cache", world.directory + "/get-cache", "hf://haul-test/model"], in: world,
            environment: hub.environment())
        #expect(got.status == 0, "\(got.stderr)")
        let theirs = try await PythonScript.run(python: HubServer.python, ["Tests/HF/hub_client.py", "tree", cache])
        let mine = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "tree", world.directory + "/get-cache"])
        #expect(theirs.output == mine.output && !mine.output.isEmpty, "daemon: \(theirs.output)\nget: \(mine.output)")
        let offline = try await PythonScript.run(
            python: HubServer.python, ["Tests/HF/hub_client.py", "offline", cache, "haul-test/model"],
            environment: hub.environment())
        #expect(offline.status == 0, "\(offline.output)")
        _ = await daemon.terminate()
        try await world.close()
    }

    /// Each refusal is one line and its exit code: an unknown repository (the Hub's 401
    /// `RepoNotFound` without a token, 404 with one) or revision 3, nothing matching 3, a bad
    /// name 2; a gated repository 3, with one line that says what to do and no `/resolve/`
    /// address: without a token refused from the revision's answer (`gated`) before any file is
    /// asked, with a token that has not accepted its terms from the Hub's 403 `GatedRepo`.
    @Test func refusalsAreOneLineWithTheirExitCodes() async throws {
        let hub = try await HubServer.shared()
        let world = try await World.make()
        var wrong = hub.environment()
        wrong["HF_TOKEN"] = "hf_wrong"
        let refused =
            "haul: hf://haul-test/gated is gated: accept its terms on the Hub and set HF_TOKEN (or --hf-token-file)\n"
        let cases: [(arguments: [String], environment: [String: String], status: Int32, says: String)] = [
            (["hf://haul-test/absent"], hub.environment(), 3, "no such model haul-test/absent (or it is private"),
            (["hf://haul-test/absent"], wrong, 3, "no such model haul-test/absent"),
            (["hf://haul-test/model@nope"], hub.environment(), 3, "no revision 'nope'"),
            (["hf://haul-test/gated"], hub.environment(), 3, refused),
            (["hf://haul-test/gated"], wrong, 3, refused),
            (["--include", "*.gguf", "hf://haul-test/model"], hub.environment(), 3, "matches"),
            (["hf://only-one-part"], hub.environment(), 2, "bad Hugging Face name"),
        ]
        for item in cases {
            let before = try await hub.stats().resolve["haul-test/gated"] ?? 0
            let result = try await HaulProcess.run(
                ["get", "-q", "-d", "refused"] + item.arguments, in: world, environment: item.environment)
            #expect(result.status == item.status, "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.contains(item.says), "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(!result.stderr.contains("/resolve/"), "no address: \(result.stderr)")
            if item.says == refused, item.environment["HF_TOKEN"] == "" {
                #expect(
                    try await hub.stats().resolve["haul-test/gated"] ?? 0 == before, "no file asked without a token")
            }
        }
        let gated = try await HaulProcess.run(
            ["get", "-q", "-d", "gated", "hf://haul-test/gated"], in: world, environment: hub.environment(token: true))
        #expect(gated.status == 0, "\(gated.stderr)")
        try await world.close()
    }
}

/// `Tests/HF/hub_server.py`: the Hub and its CDN, until its standard input closes.
struct HubServer {
    static let python = PythonScript.packageRoot + "/.build-venv/hf/bin/python"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: python) }

    let fixture: PythonFixture
    let port: Int
    /// Each file's SHA-256 by `KIND/REPO@REVISION/PATH`.
    let sha256: [String: String]

    /// One Hub for the whole suite, its CDN's URLs living two seconds; it ends with the test
    /// process. No test changes what it serves (the CDN's counts only grow, and no test sends it
    /// a token).
    static func shared() async throws -> HubServer { try await started.value }
    private static let started = Task { try await HubServer.start(urlSeconds: 2) }

    static func start(urlSeconds: Int = 60) async throws -> HubServer {
        struct Ready: Decodable {
            let port: Int
            let sha256: [String: String]
        }
        let (fixture, ready) = try await PythonFixture.start(
            python: "/usr/bin/python3", script: "Tests/HF/hub_server.py", as: Ready.self,
            environment: ["URL_SECONDS": String(urlSeconds)])
        return HubServer(fixture: fixture, port: ready.port, sha256: ready.sha256)
    }

    /// `HF_ENDPOINT` at this Hub, `HF_TOKEN` the one it takes when `token`, and no user's own:
    /// `HF_HOME` is a folder of this Hub's own under the temporary directory, never the machine's
    /// (huggingface_hub writes a snapshot's ref there even with `local_dir`; a fixed path such as
    /// `/nonexistent` became a real folder that way and broke another suite's "no such file").
    func environment(token: Bool = false) -> [String: String] {
        [
            "HF_ENDPOINT": "http://127.0.0.1:\(port)", "HF_TOKEN": token ? "hf_test_token" : "",
            "HF_HOME": FileManager.default.temporaryDirectory.path + "/haul-test-hf-home-\(port)",
        ]
    }

    struct Stats: Decodable {
        let cdn: [String: Int]
        let cdnAuthorization: Int
        /// Body bytes the CDN wrote, by blob (those a connection closed early took included).
        let cdnBytes: [String: Int]
        /// `/resolve/` requests by `ORG/REPO`.
        let resolve: [String: Int]
    }

    /// The CDN's counts, and the Hub's of `/resolve/`.
    func stats() async throws -> Stats {
        let response = try await DaemonProcess.http.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/_stats"), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try JSONDecoder().decode(Stats.self, from: Data(body.readableBytesView))
    }

}
