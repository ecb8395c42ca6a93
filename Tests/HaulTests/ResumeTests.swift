import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// DESIGN rule 3 against a server that misbehaves on the wire.
@Suite(.timeLimit(.minutes(2))) struct ResumeTests {
    let payload = Payload(seed: 42, length: 1_000_000)

    @Test func repeatedDropsResumeWithRangeUntilComplete() async throws {
        try await withHarness(maxAttempts: 2) { harness in
            harness.server.setRoute("/file", Route(payload: payload, then: .dropAfter(90_000)))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let requests = harness.server.requests(to: "/file")
            #expect(requests.count >= 11, "a 90 kB drop on a 1 MB file needs at least 12 requests")
            #expect(requests.first?.range == nil)
            let etag = Route.defaultETag(for: payload)
            var previous: Int64 = 0
            for request in requests.dropFirst() {
                let start = try #require(request.range.flatMap { Int64($0.dropFirst(6).prefix { $0 != "-" }) })
                #expect(start > previous, "each resume starts past the last")
                previous = start
                #expect(request.header("If-Range") == etag)
                #expect(request.header("Accept-Encoding") == "identity")
            }
            #expect(harness.listing() == ["file"], "no .part left behind")
        }
    }

    @Test func serverIgnoringRangeStartsOverCleanly() async throws {
        try await withHarness { harness in
            // Ignores ranges from the second request on: the 200 to the resume's If-Range could be a CDN
            // mishandling the ETag, so the range is asked once more without it; a second 200 starts over.
            harness.server.setRoute("/file", Route(payload: payload, script: [.dropAfter(300_000)], then: .ignoreRange))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            #expect(outcome.restarted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            // The resume asked for the rest from what had been read when the drop came: AsyncHTTPClient
            // may drop body parts it buffered but the engine had not read, so not always 300,000.
            let resume = harness.server.requests(to: "/file")[1]
            let start = try #require(resume.range.flatMap { Int64($0.dropFirst(6).prefix { $0 != "-" }) })
            #expect(
                (1...300_000).contains(start) && resume.range == "bytes=\(start)-999999",
                "\(String(describing: resume.range))")
            #expect(resume.header("If-Range") == Route.defaultETag(for: payload))
        }
    }

    @Test func changedValidatorDiscardsOldBytes() async throws {
        let newer = Payload(seed: 7, length: 800_000)
        try await withHarness { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, script: [.dropAfter(300_000), .switchEntity(newer, etag: "\"v2\"")]))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            #expect(newer.mismatch(inFileAt: harness.directory + "/file") == nil, "the result is the new file, whole")
            #expect(outcome.record.validator?.etag == "\"v2\"")
            #expect(outcome.record.totalLength == 800_000)
        }
    }

    @Test func wrongContentRangeIsNeverAppended() async throws {
        try await withHarness { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, script: [.dropAfter(300_000), .wrongContentRange(shift: -1000)]))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(harness.server.requests(to: "/file").count == 3)
        }
    }

    @Test func persistentlyWrongContentRangeFailsWithoutAFinalFile() async throws {
        try await withHarness(maxAttempts: 3) { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, script: [.dropAfter(300_000)], then: .wrongContentRange(shift: 4096)))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.failure?.code == .badResponse)
            #expect(harness.listing() == ["file.part"])
            // The client may not see every byte sent before a drop; what it kept is exactly a prefix.
            let kept = outcome.record.completedLength
            let size = try #require(
                try FileManager.default.attributesOfItem(atPath: harness.directory + "/file.part")[.size] as? Int64)
            #expect(kept > 0 && kept <= size && size <= 300_000)
            #expect(
                payload.mismatch(inFileAt: harness.directory + "/file.part", range: 0...(size - 1)) == nil,
                "the partial file holds exactly the good prefix, nothing written from a wrong range")
        }
    }

    @Test func lyingContentLengthIsNeverSuccess() async throws {
        try await withHarness(maxAttempts: 3) { harness in
            harness.server.setRoute("/file", Route(payload: payload, then: .lyingContentLength(extra: 5000)))
            let outcome = try await harness.download(harness.request("/file"))
            let error = try #require(outcome.final.failure, "\(outcome.events)")
            #expect(error.code != .internal)
            #expect(!harness.listing().contains("file"), "no final file for a short body")
            #expect(outcome.record.status == .failed)
        }
    }

    @Test func shortBodyThenHonestServerCompletes() async throws {
        try await withHarness { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, script: [.lyingContentLength(extra: 0), .dropAfter(10)]))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func rangeNotSatisfiableAtLocalLengthMeansComplete() async throws {
        try await withHarness { harness in
            // A chunked download that got every byte but never saw the end of the body (the
            // connection died before the last chunk): the client has the whole file but cannot
            // know it, so it asks for more. Set up on disk and in the store directly, so no
            // timing decides what the client holds.
            harness.server.setRoute("/file", Route(payload: payload, chunked: true))
            let request = try harness.request("/file")
            var record = DownloadRecord(id: .random(), request: request, createdAt: 0)
            record.status = .paused
            record.fileName = "file"
            record.validator = EntityValidator(etag: Route.defaultETag(for: payload), lastModified: nil)
            record.segments = [Segment(start: 0, end: nil, written: payload.length)]
            try FileManager.default.createDirectory(atPath: harness.directory, withIntermediateDirectories: true)
            try Data(payload.bytes(0..<payload.length)).write(
                to: URL(fileURLWithPath: harness.directory + "/file.part"))
            try await harness.store.save(record)

            let events = harness.manager.events()
            try await harness.manager.resume(record.id)
            let outcome = try await harness.waitForEnd(of: record.id, in: events)
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            let requests = harness.server.requests(to: "/file")
            #expect(requests.map(\.range) == ["bytes=1000000-"])
            #expect(harness.server.bodyBytesSent(to: "/file") == 0, "nothing fetched twice")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }

    @Test func serverErrorsThenSuccess() async throws {
        try await withHarness { harness in
            harness.server.setRoute(
                "/file",
                Route(
                    payload: payload,
                    script: [.status(503, headers: [("Retry-After", "0")]), .status(500), .status(502)]))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            #expect(harness.server.requests(to: "/file").count == 4)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let retries = outcome.events.compactMap { if case .retrying(_, _, let error) = $0 { error } else { nil } }
            #expect(retries.count == 3)
            #expect(retries.map(\.httpStatus) == [503, 500, 502], "each retry names the failure it follows")
        }
    }

    @Test func retryAfterIsHonouredOnTheInjectedClock() async throws {
        let clock = ManualClock()
        try await withHarness(clock: ClockAdapter(clock)) { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, script: [.status(503, headers: [("Retry-After", "120")])]))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/file"))
            // The retry's wait, on the injected clock; the run's ticker sleeps on it too, shorter.
            let retry = clock.now.advanced(by: .seconds(120))
            #expect(await clock.waitForSleepers { $0.contains(retry) })
            #expect(clock.sleepers.last == retry)
            #expect(harness.server.requests(to: "/file").count == 1, "nothing is sent before the server's time")
            clock.advance(by: .seconds(120))
            let outcome = try await harness.waitForEnd(of: record.id, in: events)
            #expect(outcome.final.isCompleted)
            #expect(harness.server.requests(to: "/file").count == 2)
        }
    }

    @Test func redirectsAreFollowedAndRecorded() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/real.bin", Route(payload: payload))
            harness.server.setRoute("/hop2", Route(payload: payload, then: .redirect(to: "/real.bin", status: 301)))
            harness.server.setRoute("/hop1", Route(payload: payload, then: .redirect(to: "/hop2")))
            let outcome = try await harness.download(harness.request("/hop1"))
            #expect(outcome.final.isCompleted)
            #expect(outcome.record.finalURL == harness.server.url("/real.bin"))
            #expect(
                payload.mismatch(inFileAt: harness.directory + "/real.bin") == nil,
                "named after the final URL: \(harness.listing())")
        }
    }

    @Test func redirectLoopFails() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/a", Route(payload: payload, then: .redirect(to: "/b")))
            harness.server.setRoute("/b", Route(payload: payload, then: .redirect(to: "/a")))
            let outcome = try await harness.download(harness.request("/a"))
            #expect(outcome.final.failure?.code == .tooManyRedirects)
            #expect(harness.server.requests.count <= 12)
            #expect(harness.listing().isEmpty)
        }
    }

    @Test func chunkedBodyWithoutLength() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/stream", Route(payload: payload, chunked: true))
            let outcome = try await harness.download(harness.request("/stream"))
            #expect(outcome.final.isCompleted)
            #expect(outcome.record.totalLength == payload.length)
            #expect(payload.mismatch(inFileAt: harness.directory + "/stream") == nil)
        }
    }

    @Test func stalledConnectionTimesOutAndResumes() async throws {
        try await withHarness(readTimeout: .seconds(1)) { harness in
            harness.server.setRoute("/file", Route(payload: payload, script: [.stallAfter(200_000)]))
            let outcome = try await harness.download(harness.request("/file"))
            #expect(outcome.final.isCompleted)
            // Resumed inside what was sent before the stall (a slow machine may have read less).
            // The first resume: on a loaded machine a later attempt may time out too.
            let requests = harness.server.requests(to: "/file")
            let resumedAt =
                (requests.count > 1 ? requests[1].range : nil)
                .flatMap { Int64($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
            #expect(resumedAt > 0 && resumedAt <= 200_000, "resumed at \(resumedAt)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }
}
