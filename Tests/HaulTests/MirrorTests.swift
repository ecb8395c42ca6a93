import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// One file from several URLs through the real engine: two test servers on their own ports
/// (two hosts to haul), healthy, dead, busy and lying. The file is checked byte for byte every
/// time: a mirror's bytes are written only after they proved to be the same file.
@Suite(.timeLimit(.minutes(2))) struct MirrorTests {
    let payload = Payload(seed: 2101, length: 6 << 20)

    func mirrored(_ harness: Harness, mirrors: [String], connections: Int = 4) throws -> DownloadRequest {
        var request = try harness.request("/file", connections: connections)
        request.mirrors = try mirrors.map { try RemoteURL($0) }
        return request
    }

    /// Payload bytes a server sent for requests other than probes (probes ask for `overlap`
    /// bytes at most: 64 KiB).
    func pieceRequests(_ server: TestServer) -> [RecordedRequest] {
        server.requests(to: "/file").filter { request in
            guard let range = request.range.flatMap(ByteRange.init(parsing:)), let count = range.count else {
                return true
            }
            return count > 64 << 10
        }
    }

    @Test func healthyMirrorsShareTheWork() async throws {
        // 16 MiB over 4 connections: 1 MiB pieces, four to each part, so connections reach piece
        // ends (where they move to the mirror) several times however loaded the machine is.
        let payload = Payload(seed: 2103, length: 16 << 20)
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/file", Route(payload: payload, throttle: 2 << 20))
            mirror.setRoute("/file", Route(payload: payload, throttle: 2 << 20))
            let outcome = try await harness.download(mirrored(harness, mirrors: [mirror.url("/file")]))
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            #expect(!pieceRequests(mirror).isEmpty, "the mirror served pieces: \(mirror.requests(to: "/file"))")
            #expect(!pieceRequests(harness.server).isEmpty)
            try await mirror.shutdown()
        }
    }

    /// A primary 128x slower than its mirror, listed first: every connection starts on it (the
    /// mirror cannot be probed before bytes are written), and once the mirror is measured they
    /// move there, closing their requests to the primary midway. The file is whole, and most of
    /// it came from the mirror.
    @Test func aSlowPrimaryLeavesTheWorkToItsMirror() async throws {
        let payload = Payload(seed: 2104, length: 16 << 20)
        try await withHarness(minimumSegmentSize: 256 << 10) { harness in
            let mirror = try await TestServer.start()
            // 32x (128 KiB/s) let a CI machine loaded enough to slow the mirror's connections see
            // under 4x between them, and the primary's requests ran to their end.
            harness.server.setRoute("/file", Route(payload: payload, throttle: 32 << 10))
            mirror.setRoute("/file", Route(payload: payload, throttle: 4 << 20))
            let outcome = try await harness.download(mirrored(harness, mirrors: [mirror.url("/file")]))
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            #expect(
                mirror.bodyBytesSent(to: "/file") > payload.length / 2,
                "primary \(harness.server.responses(to: "/file")), mirror \(mirror.responses(to: "/file"))")
            #expect(
                harness.server.responses(to: "/file").contains { response in
                    response.range.map { Int64($0.count) > response.bodyBytesSent } ?? false
                }, "a request to the primary was closed midway: \(harness.server.responses(to: "/file"))")
            try await mirror.shutdown()
        }
    }

    /// A mirror that serves another file of the same length never writes a byte: its probe
    /// differs, it is dropped, and the file is the primary's.
    @Test func aLyingMirrorIsDroppedAndTheFileIsThePrimarys() async throws {
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/file", Route(payload: payload, throttle: 4 << 20))
            mirror.setRoute("/file", Route(payload: Payload(seed: 2102, length: payload.length), throttle: 4 << 20))
            let outcome = try await harness.download(mirrored(harness, mirrors: [mirror.url("/file")]))
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            #expect(!mirror.requests(to: "/file").isEmpty, "the mirror was probed")
            #expect(pieceRequests(mirror).isEmpty, "\(mirror.requests(to: "/file"))")
            try await mirror.shutdown()
        }
    }

    /// Dead mirrors (a refused port, a 404) and a busy one (503) cost nothing: the file comes
    /// from the primary.
    @Test func deadAndBusyMirrorsAreLeftAside() async throws {
        let refusing = try LoopbackPort.Refusing()
        defer { withExtendedLifetime(refusing) {} }
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/file", Route(payload: payload, throttle: 8 << 20))
            mirror.setRoute("/gone", Route(payload: payload, then: .status(404)))
            mirror.setRoute("/busy", Route(payload: payload, then: .status(503)))
            let outcome = try await harness.download(
                mirrored(
                    harness,
                    mirrors: [
                        "http://127.0.0.1:\(refusing.port)/file", mirror.url("/gone"), mirror.url("/busy"),
                    ]))
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            #expect(!outcome.events.contains { if case .failed = $0 { true } else { false } })
            try await mirror.shutdown()
        }
    }

    /// A dead primary: the mirror serves the whole file, and the download does not fail.
    @Test func aDeadPrimaryLeavesTheFileToTheMirror() async throws {
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/file", Route(payload: payload, then: .status(404)))
            mirror.setRoute("/file", Route(payload: payload))
            let outcome = try await harness.download(mirrored(harness, mirrors: [mirror.url("/file")], connections: 2))
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            #expect(mirror.bodyBytesSent(to: "/file") >= payload.length)
            try await mirror.shutdown()
        }
    }

    /// No source works: the download fails with the primary's error, and nothing is published.
    @Test func everySourceDeadFails() async throws {
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/file", Route(payload: payload, then: .status(404)))
            mirror.setRoute("/file", Route(payload: payload, then: .status(410)))
            let outcome = try await harness.download(mirrored(harness, mirrors: [mirror.url("/file")], connections: 2))
            #expect(outcome.record.status == .failed)
            #expect(
                outcome.record.error?.httpStatus == 404 || outcome.record.error?.httpStatus == 410,
                "\(String(describing: outcome.record.error))")
            #expect(
                harness.listing().allSatisfy { !$0.hasPrefix("file") || $0.hasSuffix(".part") }, "\(harness.listing())")
            try await mirror.shutdown()
        }
    }
}
