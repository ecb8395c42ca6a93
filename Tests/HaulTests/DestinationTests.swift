import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// Names, paths and bad destinations: nothing is ever written outside the destination directory.
@Suite(.timeLimit(.minutes(2))) struct DestinationTests {
    let payload = Payload(seed: 3, length: 50_000)

    @Test(arguments: [
        ("attachment; filename=\"../../escape.txt\"", "escape.txt"),
        ("attachment; filename=\"/etc/passwd\"", "passwd"),
        ("attachment; filename*=UTF-8''evil%1B%5B2J%07%0A.txt", "evil[2J.txt"),
        ("attachment; filename=\"\"", "named-by-url.bin"),
        ("attachment; filename=\"..\"", "named-by-url.bin"),
        ("attachment; filename*=UTF-8''..%2F..%2Fx%20y.txt", "x y.txt"),
    ])
    func hostileContentDispositionStaysInside(header: String, expected: String) async throws {
        try await withHarness { harness in
            harness.server.setRoute("/named-by-url.bin", Route(payload: payload, contentDisposition: header))
            let outcome = try await harness.download(harness.request("/named-by-url.bin"))
            #expect(outcome.final.isCompleted)
            #expect(harness.listing() == [expected])
            #expect(payload.mismatch(inFileAt: harness.directory + "/" + expected) == nil)
            let parent = (harness.directory as NSString).deletingLastPathComponent
            let siblings = try FileManager.default.contentsOfDirectory(atPath: parent).sorted()
            #expect(siblings == ["downloads", "state"], "nothing written next to the destination")
        }
    }

    @Test func takenNameGetsASuffixAndTheOldFileIsKept() async throws {
        try await withHarness { harness in
            let existing = harness.directory + "/data.bin"
            try Data("precious".utf8).write(to: URL(fileURLWithPath: existing))
            harness.server.setRoute("/data.bin", Route(payload: payload))
            let outcome = try await harness.download(harness.request("/data.bin"))
            #expect(outcome.final.isCompleted)
            #expect(try String(contentsOfFile: existing, encoding: .utf8) == "precious")
            #expect(payload.mismatch(inFileAt: harness.directory + "/data.1.bin") == nil)
        }
    }

    @Test func explicitOutputThatExistsIsRefused() async throws {
        try await withHarness { harness in
            let existing = harness.directory + "/out.bin"
            try Data("precious".utf8).write(to: URL(fileURLWithPath: existing))
            harness.server.setRoute("/data.bin", Route(payload: payload))
            await #expect {
                _ = try await harness.manager.add(harness.request("/data.bin", output: "out.bin"))
            } throws: { error in
                (error as? HaulError)?.code == .fileExists
            }
            #expect(try String(contentsOfFile: existing, encoding: .utf8) == "precious")
            #expect(harness.server.requests.isEmpty)
        }
    }

    @Test func twoDownloadsWithTheSameNameDoNotCollide() async throws {
        let other = Payload(seed: 99, length: 70_000)
        try await withHarness { harness in
            harness.server.setRoute("/a/file.iso", Route(payload: payload, throttle: 200_000))
            harness.server.setRoute("/b/file.iso", Route(payload: other, throttle: 200_000))
            let outcomes = harness.manager.outcomes()
            let first = try await harness.manager.add(harness.request("/a/file.iso"))
            let second = try await harness.manager.add(harness.request("/b/file.iso"))
            var pending: Set = [first.id, second.id]
            for await outcome in outcomes {
                #expect(outcome.status == .completed, "\(outcome)")
                pending.remove(outcome.id)
                if pending.isEmpty { break }
            }
            let one = try #require(try await harness.manager.record(first.id))
            let two = try #require(try await harness.manager.record(second.id))
            #expect(Set([one.fileName, two.fileName]) == ["file.iso", "file.1.iso"])
            let firstPath = harness.directory + "/" + one.fileName!
            let secondPath = harness.directory + "/" + two.fileName!
            #expect(payload.mismatch(inFileAt: firstPath) == nil)
            #expect(other.mismatch(inFileAt: secondPath) == nil)
        }
    }

    @Test func notFoundFailsWithNoFile() async throws {
        try await withHarness { harness in
            let outcome = try await harness.download(harness.request("/missing"))
            let error = try #require(outcome.final.failure)
            #expect(error.code == .httpStatus)
            #expect(error.httpStatus == 404)
            #expect(error.message.contains(harness.server.url("/missing")))
            #expect(harness.listing().isEmpty)
            #expect(harness.server.requests.count == 1, "a 404 is not retried")
        }
    }

    @Test func unwritableDestinationFailsClearly() async throws {
        try await withHarness { harness in
            let blocker = harness.directory + "/not-a-dir"
            try Data("file".utf8).write(to: URL(fileURLWithPath: blocker))
            harness.server.setRoute("/f", Route(payload: payload))
            let outcome = try await harness.download(harness.request("/f", directory: blocker + "/sub"))
            let error = try #require(outcome.final.failure)
            #expect(error.code == .fileSystem)
            #expect(try String(contentsOfFile: blocker, encoding: .utf8) == "file")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionRefusedFailsAfterRetries() async throws {
        // A refused connection fails its try at once: with a connect timeout of an hour, the
        // transport must not keep retrying it until the timeout (AsyncHTTPClient's default).
        try await withHarness(maxAttempts: 3, connectTimeout: .seconds(3600)) { harness in
            let request = try DownloadRequest(
                url: RemoteURL("http://127.0.0.1:1/x"), destination: .directory(harness.directory))
            let outcome = try await harness.download(request)
            #expect(outcome.final.failure?.code == .network)
            #expect(outcome.events.filter { if case .retrying = $0 { true } else { false } }.count == 2)
            #expect(harness.listing().isEmpty)
        }
    }
}
