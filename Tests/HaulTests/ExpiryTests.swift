import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

/// A signed URL that expires midway: without a refresh command the download fails as
/// `url-expired` with its bytes kept ("needs a new URL") until it is given one; with one, it
/// asks the command and goes on in the same run. A redirect to a login page counts as expiry.
/// Byte-exact, and the new server's bytes counted.
@Suite(.timeLimit(.minutes(2))) struct ExpiryTests {
    /// A refresh command that outlives its time is killed, and the refresh fails saying so; a
    /// command that prints a URL and exits gives it. (Its output is read on the blocking pool.)
    @Test func aRefreshCommandPastItsTimeIsKilledAndOneThatAnswersGivesItsURL() async throws {
        let request = try DownloadRequest(url: RemoteURL("http://h/expired"), destination: .directory("/tmp"))
        let record = DownloadRecord(id: DownloadID(rawValue: "r"), request: request, createdAt: 0)
        // `exec`: killing the shell kills what holds its output. (A command whose children keep
        // the output open ends only with them: Foundation's `Process` reports the shell's end
        // once its output closes.)
        let slow = await URLRefresher(command: "exec sleep 30", timeout: .milliseconds(300)).refresh(record)
        guard case .failure(let error) = slow else {
            Issue.record("a command killed at its timeout gave \(slow)")
            return
        }
        #expect(error.message.contains("refresh command"), "\(error)")
        let quick = await URLRefresher(command: "echo \"$HAUL_URL?renewed\"").refresh(record)
        #expect(try quick.get() == RemoteURL("http://h/expired?renewed"))
    }

    let payload = Payload(seed: 2130, length: 1_000_000)

    /// A script that prints `url` (and records that it ran, with the environment it got).
    func script(printing url: String, in directory: String) throws -> String {
        let path = directory + "/refresh.sh"
        try """
        #!/bin/sh
        echo "$HAUL_ID $HAUL_URL" >> "\(directory)/refresh.log"
        echo "\(url)"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return "sh '\(path)'"
    }

    @Test func anExpiredURLWaitsForANewOneWithItsBytesKept() async throws {
        try await withHarness { harness in
            harness.server.setRoute(
                "/signed",
                Route(
                    payload: payload, throttle: 2_000_000, script: [.dropAfter(400_000)],
                    then: .status(403)))
            harness.server.setRoute("/renewed", Route(payload: payload, etag: "\"elsewhere\""))
            let outcome = try await harness.download(harness.request("/signed", output: "file"))
            #expect(outcome.record.status == .failed)
            #expect(outcome.final.failure?.code == .urlExpired, "\(outcome.events)")
            let stored = try #require(try await harness.store.record(outcome.record.id))
            #expect(stored.needsNewURL)
            #expect(stored.completedLength > 0)
            #expect(FileManager.default.fileExists(atPath: harness.directory + "/file.part"))

            let events = harness.manager.events()
            try await harness.manager.setSources([RemoteURL(harness.server.url("/renewed"))], for: outcome.record.id)
            let done = try await harness.waitForEnd(of: outcome.record.id, in: events)
            #expect(done.final.isCompleted, "\(done.events)")
            #expect(!done.restarted, "\(done.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(
                harness.server.bodyBytesSent(to: "/renewed") <= payload.length - stored.completedLength + (64 << 10))
        }
    }

    @Test func theRefreshCommandGivesTheNewURLInTheSameRun() async throws {
        let directory = NSTemporaryDirectory() + "haul-refresh-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await TestServer.start()
        server.setRoute("/renewed", Route(payload: payload, etag: "\"elsewhere\""))
        let command = try script(printing: server.url("/renewed"), in: directory)
        try await withHarness(refreshCommand: command) { harness in
            harness.server.setRoute(
                "/signed",
                Route(
                    payload: payload, throttle: 2_000_000, script: [.dropAfter(400_000)],
                    then: .status(410)))
            let outcome = try await harness.download(harness.request("/signed", output: "file"))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(!outcome.restarted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(outcome.record.request.url.absoluteString == server.url("/renewed"), "the new URL is stored")
            // Only the rest and the overlap re-read before the resume point came from the new URL:
            // it was asked from where the bytes ended, less the overlap.
            let asked = try #require(server.requests(to: "/renewed").first?.range.flatMap(ByteRange.init(parsing:)))
            #expect(asked.start > 0)
            #expect(server.bodyBytesSent(to: "/renewed") <= payload.length - asked.start)
            let log = try String(contentsOfFile: directory + "/refresh.log", encoding: .utf8)
            #expect(log == "\(outcome.record.id.rawValue) \(harness.server.url("/signed"))\n", "\(log)")
        }
        try await server.shutdown()
    }

    /// A command that gives a URL which expires at once: a few tries without progress, then the
    /// download fails as `url-expired` with the command's failure in its message, never a loop.
    @Test func aRefreshThatNeverHelpsEndsTheDownload() async throws {
        let directory = NSTemporaryDirectory() + "haul-refresh-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withHarness(refreshCommand: "exit 3") { harness in
            harness.server.setRoute(
                "/signed",
                Route(
                    payload: payload, throttle: 2_000_000, script: [.dropAfter(400_000)],
                    then: .status(401)))
            let outcome = try await harness.download(harness.request("/signed", output: "file"))
            let error = try #require(outcome.final.failure, "\(outcome.events)")
            #expect(error.code == .urlExpired)
            #expect(
                error.message.contains("the refresh command gave no new URL: the refresh command exited with status 3"),
                "\(error.message)")
        }
        let command = try script(printing: "", in: directory)
        try await withHarness(refreshCommand: command) { harness in
            harness.server.setRoute(
                "/signed",
                Route(
                    payload: payload, throttle: 2_000_000, script: [.dropAfter(400_000)],
                    then: .status(403)))
            harness.server.setRoute("/expired-too", Route(payload: payload, then: .status(403)))
            _ = try script(printing: harness.server.url("/expired-too"), in: directory)
            let outcome = try await harness.download(harness.request("/signed", output: "file"))
            let error = try #require(outcome.final.failure, "\(outcome.events)")
            #expect(error.code == .urlExpired)
            #expect(harness.server.requests(to: "/expired-too").count == DownloadStateMachine.maxURLRefreshes)
            let log = try String(contentsOfFile: directory + "/refresh.log", encoding: .utf8)
            #expect(log.split(separator: "\n").count == DownloadStateMachine.maxURLRefreshes, "\(log)")
            #expect(FileManager.default.fileExists(atPath: harness.directory + "/file.part"), "the bytes are kept")
        }
    }

    /// A redirect to a login page (200, text/html) after bytes arrived is an expiry, not a new
    /// file: the bytes are kept and nothing of the page is written.
    @Test func aRedirectToALoginPageIsAnExpiry() async throws {
        try await withHarness { harness in
            harness.server.setRoute(
                "/signed",
                Route(
                    payload: payload, throttle: 2_000_000, script: [.dropAfter(400_000)],
                    then: .redirect(to: harness.server.url("/login"))))
            harness.server.setRoute(
                "/login",
                Route(
                    payload: Payload(seed: 1, length: 10),
                    then: .status(200, headers: [("Content-Type", "text/html; charset=utf-8")])))
            let outcome = try await harness.download(harness.request("/signed", output: "file"))
            let error = try #require(outcome.final.failure, "\(outcome.events)")
            #expect(error.code == .urlExpired)
            #expect(error.message.contains("redirected to a web page"), "\(error.message)")
            #expect(!outcome.restarted, "\(outcome.events)")
            let stored = try #require(try await harness.store.record(outcome.record.id))
            #expect(stored.needsNewURL && stored.completedLength > 0)
            #expect(
                payload.mismatch(inFileAt: harness.directory + "/file.part", range: 0...(stored.completedLength - 1))
                    == nil)
        }
    }
}
