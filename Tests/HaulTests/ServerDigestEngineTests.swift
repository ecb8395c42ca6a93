import Crypto
import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

/// The digests a server announces (RFC 9530 `Repr-Digest`/`Content-Digest`, RFC 3230 `Digest`),
/// through the real engine against the test server: the right one publishes, a wrong one fails
/// with nothing under the final name, over one connection and over four.
@Suite(.timeLimit(.minutes(2))) struct ServerDigestEngineTests {
    let payload = Payload(seed: 921, length: 1_000_000)

    enum Header: String, CaseIterable, CustomStringConvertible {
        case reprSHA256, reprSHA512, digestSHA256, digestMD5, digestSHA1
        var description: String { rawValue }

        /// The field as a server would send it for `payload`, and what the download learns.
        func field(for payload: Payload) -> (
            name: String, value: String, learned: ServerDigest.Field, algorithm: Checksum.Algorithm
        ) {
            switch self {
            case .reprSHA256: ("Repr-Digest", "sha-256=:\(payload.base64Digest(SHA256.self)):", .reprDigest, .sha256)
            case .reprSHA512:
                (
                    "Repr-Digest",
                    "sha-512=:\(payload.base64Digest(SHA512.self)):, sha-256=:\(payload.base64Digest(SHA256.self)):",
                    .reprDigest, .sha512
                )
            case .digestSHA256: ("Digest", "SHA-256=\(payload.base64Digest(SHA256.self))", .digest, .sha256)
            case .digestMD5: ("Digest", "MD5=\(payload.base64Digest(Insecure.MD5.self))", .digest, .md5)
            case .digestSHA1:
                (
                    "Digest",
                    "SHA=\(payload.base64Digest(Insecure.SHA1.self)), MD5=\(payload.base64Digest(Insecure.MD5.self))",
                    .digest, .sha1
                )
            }
        }
    }

    /// Every field and algorithm, with one connection (a 200) and with four (206s only).
    @Test(arguments: [1, 4])
    func theRightDigestPublishes(connections: Int) async throws {
        try await withHarness(minimumSegmentSize: 128 << 10) { harness in
            for header in Header.allCases {
                let field = header.field(for: payload)
                harness.server.setRoute(
                    "/\(header)", Route(payload: payload, entityHeaders: [(field.name, field.value)]))
                let outcome = try await harness.download(harness.request("/\(header)", connections: connections))
                #expect(outcome.final.isCompleted, "\(header): \(outcome.events)")
                #expect(payload.mismatch(inFileAt: harness.directory + "/\(header)") == nil)
                #expect(
                    outcome.record.serverDigest?.field == field.learned
                        && outcome.record.serverDigest?.checksum.algorithm == field.algorithm,
                    "\(header): \(String(describing: outcome.record.serverDigest))")
                #expect(outcome.record.expectedDigest?.origin == .server(field.learned))
            }
            if connections > 1 {
                #expect(harness.server.responses(to: "/reprSHA256").allSatisfy { $0.status == 206 })
            }
        }
    }

    /// The bytes are the server's, but its digest says otherwise: the download fails with
    /// `digest-mismatch`, and the final name never appears.
    @Test(arguments: [1, 4])
    func aWrongDigestFailsAndPublishesNothing(connections: Int) async throws {
        let other = Payload(seed: 922, length: payload.length)
        try await withHarness(minimumSegmentSize: 128 << 10) { harness in
            harness.server.setRoute(
                "/file",
                Route(
                    payload: payload,
                    entityHeaders: [("Repr-Digest", "sha-256=:\(other.base64Digest(SHA256.self)):")]))
            let outcome = try await harness.download(harness.request("/file", connections: connections))
            let failure = try #require(outcome.final.failure)
            #expect(failure.code == .digestMismatch)
            #expect(failure.message.contains("Repr-Digest"), "\(failure.message)")
            #expect(!harness.listing().contains("file"), "\(harness.listing())")
            #expect(outcome.record.status == .failed && outcome.record.completedLength == 0)
        }
    }

    /// A Content-Digest is of the message's content: on a 200 the whole file, checked; on a 206
    /// only that part, ignored. One wrong value for all answers shows which were read.
    @Test func aContentDigestCountsOnlyOnAWhole200() async throws {
        let wrong = Payload(seed: 923, length: payload.length).base64Digest(SHA256.self)
        try await withHarness(minimumSegmentSize: 128 << 10) { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, entityHeaders: [("Content-Digest", "sha-256=:\(wrong):")]))
            let ranged = try await harness.download(harness.request("/file", connections: 4))
            #expect(ranged.final.isCompleted, "\(ranged.events)")
            #expect(ranged.record.serverDigest == nil)
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)

            let whole = try await harness.download(harness.request("/file", output: "whole", connections: 1))
            #expect(whole.final.failure?.code == .digestMismatch)
            #expect(!harness.listing().contains("whole"))
        }
    }

    /// `--checksum` wins: with the right checksum a wrong server digest is not checked, and
    /// with a wrong checksum the failure is the checksum's.
    @Test func theRequestsChecksumWins() async throws {
        let wrong = Payload(seed: 924, length: payload.length).base64Digest(SHA256.self)
        try await withHarness { harness in
            harness.server.setRoute(
                "/file", Route(payload: payload, entityHeaders: [("Repr-Digest", "sha-256=:\(wrong):")]))
            let right = Checksum(algorithm: .sha256, hex: payload.sha256)
            let good = try await harness.download(harness.request("/file", checksum: right))
            #expect(good.final.isCompleted)
            #expect(good.record.expectedDigest == ExpectedDigest(right, from: .request))
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)

            let bad = try await harness.download(
                harness.request(
                    "/file", output: "bad", checksum: Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32)))
            )
            #expect(bad.final.failure?.code == .checksumMismatch)
        }
    }

    /// The digest changed between a pause and the resume, though ETag and length did not: the
    /// file on the server is another one, so the download starts over and verifies the new digest.
    @Test func aChangedDigestOnResumeStartsOver() async throws {
        let stale = Payload(seed: 925, length: payload.length).base64Digest(SHA256.self)
        let right = payload.base64Digest(SHA256.self)
        try await withHarness { harness in
            harness.server.setRoute(
                "/file",
                Route(
                    payload: payload, throttle: 200_000, then: .stallAfter(500_000),
                    entityHeaders: [("Repr-Digest", "sha-256=:\(stale):")]))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/file"))
            await harness.waitForProgress(of: record.id, beyond: 200_000, in: events)
            try await harness.manager.pause(record.id)
            let paused = try #require(try await harness.store.record(record.id))
            #expect(paused.completedLength > 0)
            #expect(paused.serverDigest?.checksum.algorithm == .sha256, "stored with the record")

            harness.server.setRoute(
                "/file", Route(payload: payload, entityHeaders: [("Repr-Digest", "sha-256=:\(right):")]))
            let resumed = harness.manager.events()
            try await harness.manager.resume(record.id)
            let outcome = try await harness.waitForEnd(of: record.id, in: resumed)
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(
                outcome.events.contains { if case .restarted(_, .digestChanged) = $0 { true } else { false } },
                "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/file") == nil)
            // The resume asked for the rest with If-Range; the answer's digest sent it back to byte 0.
            let ranges = harness.server.requests(to: "/file").map(\.range)
            #expect(ranges.count >= 3, "\(ranges)")
            #expect(
                ranges.dropFirst().first??.hasPrefix("bytes=") == true
                    && ranges.dropFirst().first??.hasPrefix("bytes=0-") == false,
                "\(ranges)")
            #expect(ranges.last == .some(nil), "the start-over asks for the whole file: \(ranges)")
        }
    }
}
