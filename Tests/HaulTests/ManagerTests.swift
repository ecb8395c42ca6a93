import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// The manager's promises: pause/resume/cancel, partial ranges, checksums, concurrency,
/// never downloading a finished file twice.
@Suite(.timeLimit(.minutes(2))) struct ManagerTests {
    let payload = Payload(seed: 11, length: 600_000)

    @Test func pauseKeepsBytesAndResumeContinuesWithRange() async throws {
        try await withHarness { harness in
            // The first response stalls after 200 KB: the pause always lands mid-download,
            // however late the progress event is read on a loaded machine.
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 400_000, script: [.stallAfter(200_000)]))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: record.id, beyond: 50_000, in: events)
            try await harness.manager.pause(record.id)
            let paused = try await harness.waitForEnd(of: record.id, in: events)
            #expect(paused.final == .paused)
            #expect(paused.record.status == .paused)
            let kept = paused.record.completedLength
            #expect(kept > 0)
            #expect(DestinationFilesProbe.size(harness.directory + "/slow.part")! >= kept)
            harness.server.setRoute("/slow", Route(payload: payload))
            try await harness.manager.resume(record.id)
            let done = try await harness.waitForEnd(of: record.id, in: events)
            #expect(done.final.isCompleted)
            #expect(harness.server.requests(to: "/slow").last?.range == "bytes=\(kept)-599999")
            #expect(payload.mismatch(inFileAt: harness.directory + "/slow") == nil)
        }
    }

    @Test func cancelDeletesThePartialFile() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/slow", Route(payload: payload, throttle: 200_000, then: .stallAfter(100_000)))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/slow"))
            await harness.waitForProgress(of: record.id, beyond: 0, in: events)
            try await harness.manager.cancel(record.id)
            #expect(try await harness.manager.record(record.id)?.status == .removed)
            #expect(harness.listing().isEmpty)
        }
    }

    @Test func partialRangeDownloadsOnlyThoseBytes() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            let outcome = try await harness.download(
                harness.request("/file", output: "slice", range: ByteRange(start: 1000, end: 1999)))
            #expect(outcome.final.isCompleted)
            #expect(harness.server.requests(to: "/file").first?.range == "bytes=1000-1999")
            let bytes = try #require(FileManager.default.contents(atPath: harness.directory + "/slice"))
            #expect(Array(bytes) == payload.bytes(1000..<2000))
        }
    }

    @Test func partialRangeFromAServerWithoutRangesIsCutLocally() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload, acceptsRanges: false))
            let outcome = try await harness.download(
                harness.request("/file", output: "slice", range: ByteRange(start: 5000, end: 5099)))
            #expect(outcome.final.isCompleted)
            let bytes = try #require(FileManager.default.contents(atPath: harness.directory + "/slice"))
            #expect(Array(bytes) == payload.bytes(5000..<5100))
        }
    }

    @Test func checksumIsVerifiedBeforeTheRename() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            let wrong = try Checksum(parsing: "sha-256=" + String(repeating: "0", count: 64))
            let bad = try await harness.download(harness.request("/file", checksum: wrong))
            #expect(bad.final.failure?.code == .checksumMismatch)
            #expect(!harness.listing().contains("file"), "a wrong file never gets the final name")

            let right = try Checksum(parsing: "sha-256=" + payload.sha256)
            let good = try await harness.download(harness.request("/file", checksum: right))
            #expect(good.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func concurrencyLimitIsRespected() async throws {
        try await withHarness(maxConcurrent: 2) { harness in
            var requests: [DownloadRequest] = []
            for index in 0..<5 {
                harness.server.setRoute(
                    "/f\(index)", Route(payload: Payload(seed: UInt64(index), length: 100_000), throttle: 500_000))
                requests.append(try harness.request("/f\(index)"))
            }
            var ids: [DownloadID] = []
            for request in requests { ids.append(try await harness.manager.add(request).id) }
            // Outcomes are never dropped (events may be, under load).
            for id in ids { #expect(try await harness.manager.outcome(of: id).status == .completed) }
            // -j counts transfers: a download whose bytes are all in gives its slot to the next
            // one while it is verified and published, so the server never sees three at once.
            #expect(harness.server.peakConcurrentResponses() == 2)
            for index in 0..<5 {
                #expect(
                    Payload(seed: UInt64(index), length: 100_000).mismatch(inFileAt: harness.directory + "/f\(index)")
                        == nil)
            }
        }
    }

    @Test func finishedFileIsNotDownloadedAgain() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            let first = try await harness.download(harness.request("/file"))
            #expect(first.final.isCompleted)
            let again = try await harness.download(harness.request("/file"))
            #expect(again.final == .alreadyComplete(path: harness.directory + "/file"))
            #expect(harness.server.requests(to: "/file").count == 1)
            #expect(again.record.id == first.record.id)
        }
    }

    @Test func deletedFinishedFileIsDownloadedAgain() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload))
            let first = try await harness.download(harness.request("/file"))
            #expect(first.final.isCompleted)
            try FileManager.default.removeItem(atPath: harness.directory + "/file")
            let again = try await harness.download(harness.request("/file"))
            #expect(again.final.isCompleted)
            #expect(again.record.id == first.record.id)
            #expect(harness.server.requests(to: "/file").count == 2)
            #expect(harness.server.requests(to: "/file").last?.range == nil, "fetched whole, not resumed")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func sameDownloadAddedTwiceRunsOnce() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload, throttle: 1_000_000))
            let events = harness.manager.events()
            let first = try await harness.manager.add(harness.request("/file"))
            let second = try await harness.manager.add(harness.request("/file"))
            #expect(first.id == second.id)
            let outcome = try await harness.waitForEnd(of: first.id, in: events)
            #expect(outcome.final.isCompleted)
            #expect(harness.server.requests(to: "/file").count == 1)
        }
    }
}

enum DestinationFilesProbe {
    static func size(_ path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }
}
