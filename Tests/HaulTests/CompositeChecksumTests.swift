import Crypto
import Foundation
import HaulCore
import Testing

@testable import Haul

/// An S3 multipart object's checksum, the SHA-256 of its parts' SHA-256 digests, checked by the
/// verifier part by part: the right parts pass, one changed byte or a wrong cut between parts
/// fails with `digest-mismatch`.
@Suite(.timeLimit(.minutes(1))) struct CompositeChecksumTests {
    /// Three parts as S3 would cut them: 5 MiB, 5 MiB and 1,000 bytes.
    static let parts: [[UInt8]] = [
        Array(repeating: 1, count: 5 << 20), Array(repeating: 2, count: 5 << 20), Array(repeating: 3, count: 1_000),
    ]

    /// The composite digest computed the way S3 (and moto) computes it.
    static var compositeHex: String {
        let digests = parts.flatMap { Array(SHA256.hash(data: $0)) }
        return SHA256.hash(data: digests).map { String(format: "%02x", $0) }.joined()
    }

    func verdict(file bytes: [UInt8], lengths: [Int64], hex: String = compositeHex) throws -> HaulError? {
        let root = NSTemporaryDirectory() + "haul-composite-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/multi.bin.part"))
        let directory = try #require(try DownloadDirectory.resolve(root, roots: nil, create: false))
        let composite = try CompositeChecksum(algorithm: .sha256, partLengths: lengths, hex: hex)
        return try Verifier.check(
            "multi.bin.part", in: directory, path: root + "/multi.bin.part", expectedLength: Int64(bytes.count),
            digest: nil, pieces: nil, composite: composite, url: RemoteURL("http://store/multi.bin"), stopped: { false }
        ).error
    }

    @Test func theRightPartsPass() throws {
        #expect(try verdict(file: Self.parts.flatMap { $0 }, lengths: [5 << 20, 5 << 20, 1_000]) == nil)
    }

    @Test func oneChangedByteFails() throws {
        var bytes = Self.parts.flatMap { $0 }
        bytes[(5 << 20) + 17] ^= 0xFF
        let error = try verdict(file: bytes, lengths: [5 << 20, 5 << 20, 1_000])
        #expect(error?.code == .digestMismatch)
        #expect(error?.message.contains("its 3 parts' digests") == true, "\(String(describing: error))")
    }

    @Test func theSameBytesCutElsewhereFail() throws {
        // The whole file's bytes are right, but not its parts: the composite digest is of the parts.
        let error = try verdict(file: Self.parts.flatMap { $0 }, lengths: [4 << 20, (6 << 20), 1_000])
        #expect(error?.code == .digestMismatch)
    }

    @Test func partsThatDoNotAddUpToTheFileFail() throws {
        let error = try verdict(file: Self.parts.flatMap { $0 }, lengths: [5 << 20, 5 << 20, 999])
        #expect(error?.code == .digestMismatch)
    }

    @Test func theRunsKeepTheLengthsInOrder() throws {
        let composite = try CompositeChecksum(
            algorithm: .sha256, partLengths: [8, 8, 8, 3, 8], hex: String(repeating: "0", count: 64))
        #expect(composite.runs.count == 3)
        #expect(composite.partLengths == [8, 8, 8, 3, 8])
        #expect(composite.totalLength == 35)
        #expect(throws: HaulError.self) { try CompositeChecksum(algorithm: .sha256, partLengths: [], hex: "00") }
    }
}
