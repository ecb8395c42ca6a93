import Foundation
import HaulAPI
import HaulCore
import NIOHTTP1
import Testing

/// `haul get s3://...` against a real S3 API: moto's server (`Tests/S3/moto_fixture.py`) with
/// authentication on, so every request haul signs is checked by moto (botocore's SigV4). `.ci/run`
/// makes the virtual environment `.build-venv/s3`; elsewhere the suite runs when it is there.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: MotoServer.available, "needs .build-venv/s3 with moto (.ci/run makes it)"))
struct S3EndToEndTests {
    /// One object with a SHA-256 checksum and one of three parts with a checksum of its parts:
    /// both signed, both byte-exact, both named by their keys' last segment.
    @Test func objectsAreSignedCheckedAndByteExact() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            ["get", "-q", "--s3-endpoint", moto.endpoint, "s3://haul-test/single.bin", "s3://haul-test/multi.bin"],
            in: world, environment: moto.keys)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(world.sha256(of: world.directory + "/single.bin") == moto.sha256["haul-test/single.bin"])
        #expect(world.sha256(of: world.directory + "/multi.bin") == moto.sha256["haul-test/multi.bin"])
        let stored = try #require(try await world.storedRecord())
        let records = try await world.storedRecords()
        let multi = try #require(records.first { $0.request.fileName == "multi.bin" })
        #expect(multi.request.signing == SigV4Scope(region: "us-east-1"), "each request is signed when it is sent")
        #expect(
            multi.request.compositeChecksum?.partLengths == [5 << 20, 5 << 20, 1_000],
            "checked part by part, the parts' lengths asked of the store")
        let single = try #require(records.first { $0.request.fileName == "single.bin" })
        #expect(single.request.checksum?.hex == moto.sha256["haul-test/single.bin"], "the object's own SHA-256")
        let row = StoredRecord.json(stored)
        #expect(!row.contains(moto.keys["AWS_SECRET_ACCESS_KEY"]!), "no key is stored")
        #expect(!row.contains("Signature"), "no signature is stored")
        try await world.close()
    }

    /// A prefix of 1,050 keys is listed over two pages (`ListObjectsV2` stops at 1,000), each key
    /// its own file beneath `-d`; a key that would leave the directory is skipped and said so.
    @Test func aPrefixIsListedPastOnePageAndKeptBeneathTheDirectory() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let result = try await HaulProcess.run(
            [
                "get", "-q", "-d", "tree", "--s3-endpoint", moto.endpoint, "s3://haul-test/many/",
                "s3://haul-test/bad/", "s3://haul-test/dir name/a file (1).txt",
            ], in: world, environment: moto.keys)
        #expect(result.status == 0, "\(result.stderr)")
        let tree = world.directory + "/tree"
        let names = try FileManager.default.contentsOfDirectory(atPath: tree).sorted()
        #expect(names.count == 1_050 + 2, "\(names.count) files")
        #expect(try String(contentsOfFile: tree + "/01049", encoding: .utf8) == "object 1049\n")
        #expect(try String(contentsOfFile: tree + "/a file (1).txt", encoding: .utf8) == "escaped key\n")
        #expect(try String(contentsOfFile: tree + "/ok.txt", encoding: .utf8) == "fine\n")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/escape.txt"))
        #expect(!FileManager.default.fileExists(atPath: tree + "/escape.txt"))
        #expect(result.stderr.contains("skipped the key 'bad/../escape.txt'"), "\(result.stderr)")
        try await world.close()
    }

    /// `kill -9` mid-object, then the same command: the resume's requests are signed anew (moto
    /// refuses a stale or wrong signature) and the file ends byte-exact.
    @Test func aResumeAfterKillNineIsSignedAfresh() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let arguments = [
            "get", "-q", "-x", "1", "--limit-rate", "400K", "--checkpoint-interval", "0.05", "--s3-endpoint",
            moto.endpoint, "s3://haul-test/multi.bin",
        ]
        let first = try HaulProcess(
            arguments, home: world.home, workingDirectory: world.directory, environment: moto.keys)
        _ = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        #expect(await first.wait() == SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/multi.bin"), "killed before the end")
        let checkpoint = try #require(try await world.storedRecord()).completedLength
        // Resumed after a reboot (a new boot id): from the checkpoint, signed anew.
        let second = try await HaulProcess.run(
            Array(arguments.filter { $0 != "--limit-rate" && $0 != "400K" }) + [
                "--boot-id", "after-a-reboot", "--json",
            ],
            in: world, environment: moto.keys)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(world.sha256(of: world.directory + "/multi.bin") == moto.sha256["haul-test/multi.bin"])
        let started = second.stdout.split(separator: "\n").first { $0.contains(#""type":"started""#) } ?? ""
        #expect(
            started.contains(#""completedLength":\#(checkpoint),"#),
            "resumed at its checkpoint \(checkpoint), no noted progress trusted: \(started)")
        try await world.close()
    }

    /// The daemon takes the same names through its API and aria2's `addUri`, with its own keys:
    /// one download per file, the API answering all of them, `addUri` the first.
    @Test func theDaemonTakesS3NamesThroughBothAPIs() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, ["--s3-endpoint", moto.endpoint], environment: moto.keys)
        defer { daemon.process.signal(SIGKILL) }
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads", body: #"{"url": "s3://haul-test/bad/", "directory": "\#(world.directory)/api"}"#
        )
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode([DownloadView].self)
        #expect(added.count == 1, "bad/ok.txt only: \(answer.text)")
        let call =
            #"{"jsonrpc":"2.0","id":"1","method":"aria2.addUri","params":["token:\#(daemon.serve.secret)",["s3://haul-test/multi.bin"]]}"#
        let rpc = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        let gid = try #require((rpc.json as? [String: Any])?["result"] as? String, "\(rpc.text)")
        for id in added.map(\.id) + [gid] { try await daemon.wait(for: id, status: .completed) }
        #expect(try String(contentsOfFile: world.directory + "/api/ok.txt", encoding: .utf8) == "fine\n")
        #expect(world.sha256(of: world.directory + "/multi.bin") == moto.sha256["haul-test/multi.bin"])
        // `haul add` passes the name on: one id per object under the prefix.
        let cli = try await HaulProcess.run(
            ["add", "-d", world.directory + "/cli", "s3://haul-test/plain/"], in: world, environment: moto.keys)
        #expect(cli.status == 0, "\(cli.stderr)")
        let ids = cli.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 1, "\(cli.stdout)")
        for id in ids { try await daemon.wait(for: id, status: .completed) }
        #expect(world.sha256(of: world.directory + "/cli/etag.bin") == moto.sha256["haul-test/plain/etag.bin"])
        let missing = try await daemon.call(.POST, "/api/v1/downloads", body: #"{"url": "s3://haul-test/nope.bin"}"#)
        #expect(missing.status >= 400, "\(missing.text)")
        #expect(missing.text.contains("no such key"), "\(missing.text)")
        _ = await daemon.terminate()
        try await world.close()
    }

    /// Keys from a shared credentials file and `AWS_PROFILE`, as the AWS tools read them.
    @Test func keysComeFromAProfile() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let file = world.home + "-aws-credentials"
        try """
        [default]
        aws_access_key_id = AKIANOTTHISONE
        aws_secret_access_key = nope

        [tests]
        aws_access_key_id = \(moto.keys["AWS_ACCESS_KEY_ID"]!)
        aws_secret_access_key = \(moto.keys["AWS_SECRET_ACCESS_KEY"]!)
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = [
            "AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "tests", "AWS_ACCESS_KEY_ID": "",
            "AWS_SECRET_ACCESS_KEY": "", "AWS_CONFIG_FILE": world.home + "-no-config",
        ]
        let result = try await HaulProcess.run(
            ["get", "-q", "--s3-endpoint", moto.endpoint, "s3://haul-test/plain/etag.bin"], in: world,
            environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(world.sha256(of: world.directory + "/etag.bin") == moto.sha256["haul-test/plain/etag.bin"])
        try await world.close()
    }

    /// Each refusal is one line and its exit code: no such key 3, a wrong secret 3, no keys 3,
    /// a bad name 2, an unknown profile 2; nothing is written.
    @Test func refusalsAreOneLineWithTheirExitCodes() async throws {
        let moto = try await MotoServer.shared()
        let world = try await World.make()
        let endpoint = ["--s3-endpoint", moto.endpoint]
        var wrong = moto.keys
        wrong["AWS_SECRET_ACCESS_KEY"] = "wrong"
        // Absent files inside the test's own folder: a fixed path such as `/nonexistent` is a
        // folder on some machines (another program's home), which haul rightly cannot read.
        let absent = world.directory + "/absent"
        let none = [
            "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
            "AWS_SHARED_CREDENTIALS_FILE": absent + "/credentials",
            "AWS_CONFIG_FILE": absent + "/config",
        ]
        let cases: [(arguments: [String], environment: [String: String], status: Int32, says: String)] = [
            (["s3://haul-test/nope.bin"], moto.keys, 3, "no such key"),
            (["s3://haul-test/single.bin"], wrong, 3, "access denied"),
            (["s3://haul-test/single.bin"], none, 3, "without AWS keys"),
            (["s3://Bad_Bucket/x"], moto.keys, 2, "bad S3 name"),
            (["s3://haul-test/single.bin"], moto.keys.merging(["AWS_PROFILE": "absent"]) { $1 }, 2, "AWS_PROFILE"),
            (["--s3-endpoint", "ftp://x", "s3://haul-test/single.bin"], moto.keys, 2, "--s3-endpoint"),
        ]
        for item in cases {
            let result = try await HaulProcess.run(
                ["get", "-q"] + (item.arguments.first == "--s3-endpoint" ? item.arguments : endpoint + item.arguments),
                in: world, environment: item.environment)
            #expect(result.status == item.status, "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.contains(item.says), "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        }
        #expect(world.files().isEmpty, "nothing written: \(world.files())")
        try await world.close()
    }
}

/// moto's S3 server with the test objects, run by `Tests/S3/moto_fixture.py` until its standard
/// input closes.
struct MotoServer {
    static let python = PythonScript.packageRoot + "/.build-venv/s3/bin/python"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: python) }

    let fixture: PythonFixture
    let endpoint: String
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` of the fixture's IAM user.
    let keys: [String: String]
    /// Each object's SHA-256, by `BUCKET/KEY`.
    let sha256: [String: String]

    /// One server for the whole suite, started by the first test that asks (making the 1,050
    /// objects costs seconds of CPU each time); it ends with the test process, whose end closes
    /// its standard input. No test changes what it serves.
    static func shared() async throws -> MotoServer { try await started.value }
    private static let started = Task { try await MotoServer.start() }

    static func start() async throws -> MotoServer {
        struct Ready: Decodable {
            let port: Int
            let accessKeyID: String
            let secretAccessKey: String
            let sha256: [String: String]
        }
        let (fixture, ready) = try await PythonFixture.start(
            python: python, script: "Tests/S3/moto_fixture.py", as: Ready.self)
        return MotoServer(
            fixture: fixture, endpoint: "http://127.0.0.1:\(ready.port)",
            keys: ["AWS_ACCESS_KEY_ID": ready.accessKeyID, "AWS_SECRET_ACCESS_KEY": ready.secretAccessKey],
            sha256: ready.sha256)
    }

}
