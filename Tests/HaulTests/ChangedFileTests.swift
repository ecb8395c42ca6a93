import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// The file on the server is replaced between two attempts: the result is always the new file,
/// whole, never old bytes glued to new ones or a new file cut to the old length.
@Suite(.timeLimit(.minutes(2))) struct ChangedFileTests {
    let payload = Payload(seed: 42, length: 1_000_000)

    /// Pauses a throttled download mid-way, lets `change` replace the route, resumes it.
    /// Every response of the first route stalls after `stall` bytes, so however slowly the
    /// test runs the pause lands before the old file is complete.
    func interrupted(
        _ harness: Harness, first: Route, then second: Route, connections: Int = 1,
        stall: Int64 = 500_000
    ) async throws -> Harness.Outcome {
        var first = first
        first.then = .stallAfter(stall)
        harness.server.setRoute("/file", first)
        let events = harness.manager.events()
        let record = try await harness.manager.add(harness.request("/file", connections: connections))
        await harness.waitForProgress(of: record.id, beyond: 200_000, in: events)
        try await harness.manager.pause(record.id)
        let paused = try #require(try await harness.store.record(record.id))
        #expect(paused.completedLength > 0 && paused.completedLength < payload.length)
        harness.server.setRoute("/file", second)
        let resumed = harness.manager.events()
        try await harness.manager.resume(record.id)
        return try await harness.waitForEnd(of: record.id, in: resumed)
    }

    @Test func aLongerFileIsFetchedWholeNotCutToTheOldLength() async throws {
        let longer = Payload(seed: 43, length: 1_500_000)
        try await withHarness { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, throttle: 200_000),
                then: Route(payload: longer))
            #expect(outcome.final.isCompleted)
            #expect(outcome.restarted)
            #expect(longer.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(outcome.record.totalLength == 1_500_000)
            // The resume asked for the rest of the old file with If-Range, and got the new one whole.
            let resume = try #require(harness.server.requests(to: "/file").last)
            #expect(resume.header("If-Range") == Route.defaultETag(for: payload))
            #expect(harness.server.responses(to: "/file").last?.status == 200)
        }
    }

    @Test func aLongerFileIsFetchedWholeOverSeveralConnections() async throws {
        let longer = Payload(seed: 44, length: 3_000_000)
        try await withHarness(minimumSegmentSize: 128 << 10) { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, throttle: 300_000),
                then: Route(payload: longer), connections: 4,
                stall: 210_000)
            #expect(outcome.final.isCompleted)
            #expect(longer.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func aShorterFileIsFetchedWhole() async throws {
        let shorter = Payload(seed: 45, length: 600_000)
        try await withHarness { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, throttle: 200_000),
                then: Route(payload: shorter))
            #expect(outcome.final.isCompleted)
            #expect(shorter.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func aChangedFileOfTheSameSizeWithAValidatorIsFetchedWhole() async throws {
        let same = Payload(seed: 46, length: payload.length)
        try await withHarness { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, throttle: 200_000),
                then: Route(payload: same))
            #expect(outcome.final.isCompleted)
            #expect(same.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    /// lighttpd's default, many proxies and gateways: no ETag, no Last-Modified. The resume
    /// re-reads 64 KiB before its resume point and compares them with the disk.
    @Test func withoutAValidatorAChangedFileOfTheSameSizeIsCaughtByTheOverlap() async throws {
        let same = Payload(seed: 47, length: payload.length)
        try await withHarness { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, etag: nil, throttle: 200_000),
                then: Route(payload: same, etag: nil))
            #expect(outcome.final.isCompleted)
            #expect(outcome.restarted)
            #expect(same.mismatch(inFileAt: harness.directory + "/file") == nil)
            let ranges = harness.server.requests(to: "/file").compactMap(\.range)
            #expect(
                ranges.contains { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") },
                "a resume with an overlap was tried: \(ranges)")
        }
    }

    @Test func withoutAValidatorAnUnchangedFileResumesAfterTheOverlap() async throws {
        try await withHarness { harness in
            let outcome = try await interrupted(
                harness, first: Route(payload: payload, etag: nil, throttle: 200_000),
                then: Route(payload: payload, etag: nil))
            #expect(outcome.final.isCompleted)
            #expect(!outcome.restarted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let resume = try #require(harness.server.requests(to: "/file").last?.range)
            let start = Int64(resume.dropFirst("bytes=".count).prefix { $0 != "-" }) ?? -1
            #expect(start > 0 && harness.server.responses(to: "/file").last?.status == 206, "\(resume)")
        }
    }
}
