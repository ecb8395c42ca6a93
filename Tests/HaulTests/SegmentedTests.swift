import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// One file over several connections, against the test server's faults: every test checks the
/// bytes on disk and what the server saw.
@Suite(.timeLimit(.minutes(2))) struct SegmentedTests {
    let payload = Payload(seed: 21, length: 4_000_000)

    @Test func fourConnectionsShareTheFile() async throws {
        try await withHarness(minimumSegmentSize: 512 << 10) { harness in
            // Bodies start once all four requests are in: on a slow machine the first 1 MB part
            // could otherwise end before the fourth connection arrived (peak 3, seen in CI).
            harness.server.setRoute(
                "/file", Route(payload: payload, throttle: 2_000_000, bodyGate: BodyGate(requests: 4)))
            let outcome = try await harness.download(harness.request("/file", connections: 4))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let responses = harness.server.responses(to: "/file")
            #expect(responses.allSatisfy { $0.status == 206 }, "\(responses)")
            #expect(harness.server.peakConcurrentResponses(to: "/file") == 4)
            // The first request proves range support with a first piece; then each connection
            // asks for its part a piece at a time, on the connection it has (keep-alive).
            #expect(harness.server.requests(to: "/file").first?.range == "bytes=0-524287")
            #expect(responses.count > 4, "\(responses)")
            // Four, or five when AsyncHTTPClient's pool opened one for a next piece asked while the
            // previous response's connection was still going back to the pool (seen on a loaded run).
            #expect((4...5).contains(Set(responses.map(\.connection)).count), "\(responses)")
            // Each body went out whole, unless a steal took its rest (on a loaded machine one
            // connection may fall behind): then another request asks from inside it to its end.
            for cut in responses where cut.bodyBytesSent != Int64(cut.range?.count ?? -1) {
                let range = try #require(cut.range)
                #expect(
                    responses.contains { other in
                        guard let taken = other.range else { return false }
                        return taken.lowerBound > range.lowerBound && taken.lowerBound < range.upperBound
                            && taken.upperBound == range.upperBound
                    }, "a body cut short that no steal explains: \(cut) in \(responses)")
            }
        }
    }

    @Test func aServerThatIgnoresRangesGetsOneConnection() async throws {
        try await withHarness { harness in
            harness.server.setRoute("/file", Route(payload: payload, acceptsRanges: false))
            let outcome = try await harness.download(harness.request("/file", connections: 8))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(harness.server.requests(to: "/file").count == 1)
        }
    }

    @Test func refusedConnectionsAreNotAnErrorAndNotHammered() async throws {
        try await withHarness { harness in
            // At most two at once; the rest get 503 with Retry-After: 1. A 4 MB file in parts of
            // at least 1 MiB is three parts: the first answer opens two more connections, one
            // admitted and one refused. Bodies start once those three requests are in, so the two
            // admitted cannot finish before the third arrives, however slow the machine (CI once
            // saw none refused).
            harness.server.setRoute(
                "/file",
                Route(
                    payload: payload, throttle: 1_000_000,
                    connectionCap: ConnectionCap(limit: 2, retryAfter: "1"),
                    bodyGate: BodyGate(requests: 3)))
            let outcome = try await harness.download(harness.request("/file", connections: 8))
            #expect(outcome.final.isCompleted, "\(outcome.events.suffix(3))")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let refused = harness.server.responses(to: "/file").filter(\.refused)
            #expect(!refused.isEmpty)
            // After that, one try per Retry-After at most: a download of a few seconds cannot
            // see more than a handful.
            #expect(refused.count <= 12, "\(refused.count) refused requests")
            #expect(harness.server.peakConcurrentResponses(to: "/file") <= 2)
        }
    }

    @Test func aSlowConnectionDoesNotHoldTheFileBack() async throws {
        try await withHarness(minimumSegmentSize: 256 << 10) { harness in
            // Every third connection is sixty-four times slower than the others (sixteen times was
            // not enough on a CI machine so loaded that the fast ones were starved to its speed).
            harness.server.setRoute(
                "/file", Route(payload: payload, connectionThrottles: [4 << 20, 4 << 20, 64 << 10]))
            let outcome = try await harness.download(harness.request("/file", connections: 3))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let byConnection = Dictionary(grouping: harness.server.responses(to: "/file"), by: \.connection)
                .mapValues { $0.reduce(0) { $0 + $1.bodyBytesSent } }
            let slowest = try #require(byConnection.values.min())
            // Its planned third was stolen from: it sent well under its share.
            #expect(slowest < payload.length / 3, "\(byConnection)")
        }
    }

    @Test func aWholeAnswerToOneRangeRequestIsNotWritten() async throws {
        try await withHarness { harness in
            // The third request (a range) gets a 200 with the whole file.
            harness.server.setRoute(
                "/file", Route(payload: payload, throttle: 4_000_000, script: [.none, .none, .ignoreRange]))
            let outcome = try await harness.download(harness.request("/file", connections: 4))
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(harness.server.responses(to: "/file").contains { $0.status == 200 })
        }
    }

    /// Issue 45, part 8: every second request gets a 200 with the whole file, the entity the same.
    /// While other connections bring bytes such an answer uses no try. Before, with two tries
    /// here, a connection that met two in a row gave up, and when no other was receiving just
    /// then the download failed ("the server ignored a range request"): 3 runs in 10.
    @Test func everySecondRangeRequestAnsweredWholeStillFinishes() async throws {
        try await withHarness(maxAttempts: 2, minimumSegmentSize: 64 << 10) { harness in
            let script = (1...4096).map { $0 % 2 == 0 ? Fault.ignoreRange : Fault.none }
            harness.server.setRoute("/file", Route(payload: payload, script: script))
            let outcome = try await harness.download(harness.request("/file", connections: 8))
            #expect(outcome.final.isCompleted, "\(outcome.events.suffix(3))")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            let responses = harness.server.responses(to: "/file")
            #expect(responses.count(where: { $0.status == 200 }) >= 2, "\(responses)")
            #expect(responses.count(where: { $0.status == 206 }) > 8, "\(responses)")
        }
    }

    @Test func anEntityThatChangesMidwayRestartsOnTheNewOne() async throws {
        try await withHarness { harness in
            let newer = Payload(seed: 22, length: 5_000_000)
            // From the third request on, the server has a new, longer file.
            harness.server.setRoute(
                "/file",
                Route(
                    payload: payload, throttle: 1_000_000,
                    script: [.none, .none, .switchEntity(newer, etag: "\"v2\"")]))
            let outcome = try await harness.download(harness.request("/file", connections: 4))
            #expect(outcome.final.isCompleted)
            #expect(outcome.restarted)
            #expect(newer.mismatch(inFileAt: harness.directory + "/file") == nil)
            #expect(outcome.record.totalLength == 5_000_000)
        }
    }

    @Test func aPauseStoresTheBytesEvenWithoutPeriodicCheckpoints() async throws {
        try await withHarness(checkpointInterval: .seconds(3600)) { harness in
            harness.server.setRoute("/file", Route(payload: payload, throttle: 1_000_000))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/file", connections: 2))
            await harness.waitForProgress(of: record.id, beyond: 300_000, in: events)
            try await harness.manager.pause(record.id)
            let stored = try #require(try await harness.store.record(record.id))
            #expect(stored.status == .paused)
            // Only the stop's own checkpoint can have stored these bytes.
            #expect(stored.completedLength > 300_000)
            for segment in stored.segments where segment.written > 0 {
                let range = segment.start...(segment.start + segment.written - 1)
                #expect(
                    fileBytes(harness.directory + "/file.part", range)
                        == payload.bytes(range.lowerBound..<(range.upperBound + 1)))
            }
            // Resumed, every part continues where it stopped.
            let resumed = harness.manager.events()
            try await harness.manager.resume(record.id)
            let outcome = try await harness.waitForEnd(of: record.id, in: resumed)
            #expect(outcome.final.isCompleted)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
        }
    }
}

/// The bytes of a file at `range`, read with positional reads (a sparse `.part` has holes elsewhere).
func fileBytes(_ path: String, _ range: ClosedRange<Int64>) -> [UInt8]? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    guard (try? handle.seek(toOffset: UInt64(range.lowerBound))) != nil,
        let data = try? handle.read(upToCount: Int(range.upperBound - range.lowerBound + 1))
    else { return nil }
    return [UInt8](data)
}
