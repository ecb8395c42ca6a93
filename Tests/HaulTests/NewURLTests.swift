import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

/// A new URL for a download keeps its bytes when it serves the same file, and never glues
/// another file onto them: through `setSources` (aria2's `changeUri`, the API) and through an
/// add with the same `-o` under another URL (`haul get NEW-URL -o NAME`). The new server's
/// bytes are counted.
@Suite(.timeLimit(.minutes(2))) struct NewURLTests {
    let payload = Payload(seed: 2120, length: 1_000_000)

    /// Starts `/old` (-o file), throttled and stalling after `stall` bytes so it cannot finish,
    /// pauses it once more than 200 KB are in, and returns its record.
    func interruptedOld(_ harness: Harness, stall: Int64 = 500_000) async throws -> DownloadRecord {
        harness.server.setRoute("/old", Route(payload: payload, throttle: 300_000, then: .stallAfter(stall)))
        let events = harness.manager.events()
        let record = try await harness.manager.add(harness.request("/old", output: "file"))
        await harness.waitForProgress(of: record.id, beyond: 200_000, in: events)
        try await harness.manager.pause(record.id)
        let paused = try #require(try await harness.store.record(record.id))
        #expect(paused.completedLength > 0 && paused.completedLength < payload.length)
        return paused
    }

    @Test func theSameOutputUnderANewURLKeepsTheBytes() async throws {
        try await withHarness { harness in
            let paused = try await interruptedOld(harness)
            let other = try await TestServer.start()
            // Another server, another ETag: the bytes prove it is the same file.
            other.setRoute("/new", Route(payload: payload, etag: "\"elsewhere\""))
            var request = try harness.request("/old", output: "file")
            request.url = try RemoteURL(other.url("/new"))
            let outcome = try await harness.download(request)
            #expect(outcome.record.id == paused.id)
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(!outcome.restarted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            // The rest, and the overlap re-read before the resume point: not the whole file.
            #expect(other.bodyBytesSent(to: "/new") <= payload.length - paused.completedLength + (64 << 10))
            #expect(other.requests(to: "/new").first?.header("If-Range") == nil)
            try await other.shutdown()
        }
    }

    @Test func aNewURLServingAnotherFileStartsOver() async throws {
        try await withHarness { harness in
            let paused = try await interruptedOld(harness)
            let other = try await TestServer.start()
            let another = Payload(seed: 2121, length: payload.length)
            other.setRoute("/new", Route(payload: another))
            let record = try await harness.manager.setSources([RemoteURL(other.url("/new"))], for: paused.id)
            #expect(record.request.url.absoluteString == other.url("/new"))
            let events = harness.manager.events()
            try await harness.manager.resume(paused.id)
            let outcome = try await harness.waitForEnd(of: paused.id, in: events)
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(outcome.restarted, "said so: \(outcome.events)")
            #expect(another.mismatch(inFileAt: harness.directory + "/file") == nil, "never glued onto the old bytes")
            try await other.shutdown()
        }
    }

    /// A running download given a new URL stops at a checkpoint and goes on from its bytes.
    @Test func aRunningDownloadTakesANewURL() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/old", Route(payload: payload, throttle: 300_000, then: .stallAfter(500_000)))
            let other = try await TestServer.start()
            other.setRoute("/new", Route(payload: payload))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/old", output: "file"))
            await harness.waitForProgress(of: record.id, beyond: 200_000, in: events)
            let renewed = try await harness.manager.setSources([RemoteURL(other.url("/new"))], for: record.id)
            #expect(renewed.status == .queued || renewed.status == .running)
            // Once setSources returns the download is scheduled again: its next end is the real one.
            let done = try await harness.manager.outcome(of: record.id)
            #expect(done.status == .completed, "\(done)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(other.bodyBytesSent(to: "/new") < payload.length)
            try await other.shutdown()
        }
    }

    /// A signed URL that expires midway (403 after bytes arrived) fails as `url-expired` with its
    /// bytes kept, and a new URL for it goes on from them.
    @Test func anExpiredURLWaitsForANewOne() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/old", Route(payload: payload, script: [.dropAfter(300_000)], then: .status(403)))
            let outcome = try await harness.download(harness.request("/old", output: "file"))
            let error = try #require(outcome.record.error)
            #expect(outcome.record.status == .failed)
            #expect(error.code == .urlExpired && error.httpStatus == 403, "\(error)")
            #expect(error.message.contains("the bytes are kept"), "\(error)")
            let kept = outcome.record.completedLength
            #expect(kept > 0)
            let other = try await TestServer.start()
            other.setRoute("/new", Route(payload: payload, etag: "\"renewed\""))
            try await harness.manager.setSources([RemoteURL(other.url("/new"))], for: outcome.record.id)
            let done = try await harness.manager.outcome(of: outcome.record.id)
            #expect(done.status == .completed, "\(done)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(other.bodyBytesSent(to: "/new") <= payload.length - kept + (64 << 10))
            try await other.shutdown()
        }
    }

    /// A 403 before any byte is an HTTP error, not an expiry.
    @Test func aForbiddenFirstAnswerIsAnHTTPError() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/old", Route(payload: payload, then: .status(403)))
            let outcome = try await harness.download(harness.request("/old", output: "file"))
            #expect(outcome.record.error?.code == .httpStatus)
        }
    }

    @Test func aCompletedDownloadKeepsItsURLs() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/old", Route(payload: payload))
            let outcome = try await harness.download(harness.request("/old", output: "file"))
            #expect(outcome.final.isCompleted)
            await #expect(throws: HaulError.self) {
                try await harness.manager.setSources([RemoteURL(harness.server.url("/other"))], for: outcome.record.id)
            }
            await #expect(throws: HaulError.self) { try await harness.manager.setSources([], for: outcome.record.id) }
        }
    }

    /// Credentials belong to their origin: a new first URL on another host gets none of the old
    /// URL's (a token holder's `changeUri` must not collect the password); its own userinfo goes.
    @Test func credentialsDoNotFollowANewURLToAnotherOrigin() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/old", Route(payload: payload, throttle: 300_000, then: .stallAfter(300_000)))
            let other = try await TestServer.start()
            other.setRoute("/new", Route(payload: payload))
            var request = try harness.request("/old", output: "file")
            request.credentials = Credentials(user: "alice", password: "secret")
            let events = harness.manager.events()
            let record = try await harness.manager.add(request)
            await harness.waitForProgress(of: record.id, beyond: 100_000, in: events)
            #expect(harness.server.requests(to: "/old").first?.header("Authorization") != nil)
            try await harness.manager.setSources([RemoteURL(other.url("/new"))], for: record.id)
            let done = try await harness.manager.outcome(of: record.id)
            #expect(done.status == .completed, "\(done)")
            #expect(!other.requests(to: "/new").isEmpty)
            #expect(
                other.requests(to: "/new").allSatisfy { $0.header("Authorization") == nil },
                "\(other.requests(to: "/new").map { $0.header("Authorization") })")
            try await other.shutdown()
        }
        var request = try DownloadRequest(url: RemoteURL("http://a.example/f"), destination: .directory("/tmp"))
        request.credentials = Credentials(user: "alice", password: "secret")
        try request.replaceSources(url: RemoteURL("http://a.example/g"), mirrors: [])
        #expect(request.credentials?.user == "alice", "the same origin keeps them")
        try request.replaceSources(url: RemoteURL("http://bob:pw@b.example/g"), mirrors: [])
        #expect(request.credentials?.user == "bob", "another origin gets only its own")
        try request.replaceSources(url: RemoteURL("http://c.example/g"), mirrors: [])
        #expect(request.credentials == nil)
    }
}
