import Foundation
import HaulCore
import Testing

@testable import Haul

/// A Hub file outside LFS is checked against its git blob id: the SHA-1 of `blob LENGTH\0` and
/// the bytes, as `git hash-object` computes it.
@Suite(.timeLimit(.minutes(1))) struct GitBlobDigestTests {
    func verdict(_ text: String, _ hex: String) throws -> HaulError? {
        let root = NSTemporaryDirectory() + "haul-gitblob-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/config.json.part"))
        let directory = try #require(try DownloadDirectory.resolve(root, roots: nil, create: false))
        let expected = ExpectedDigest(Checksum(algorithm: .gitBlob, hex: hex), from: .request)
        return try Verifier.check(
            "config.json.part", in: directory, path: root + "/config.json.part", expectedLength: nil,
            digest: expected, pieces: nil, url: RemoteURL("http://hub/config.json"), stopped: { false }
        ).error
    }

    /// `printf 'hello world\n' | git hash-object --stdin`; and the empty blob git knows by heart.
    @Test func gitsOwnIdsPass() throws {
        #expect(try verdict("hello world\n", "3b18e512dba79e4c8300dd08aeb37f8e728b8dad") == nil)
        #expect(try verdict("", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391") == nil)
    }

    @Test func anotherFileFails() throws {
        let error = try verdict("hello world!\n", "3b18e512dba79e4c8300dd08aeb37f8e728b8dad")
        #expect(error?.code == .checksumMismatch)
        #expect(error?.message.contains("git-blob") == true, "\(String(describing: error))")
    }

    @Test func theAlgorithmParsesAndNamesNoContent() throws {
        let checksum = try Checksum(parsing: "git-blob=3b18e512dba79e4c8300dd08aeb37f8e728b8dad")
        #expect(checksum.algorithm == .gitBlob)
        #expect(!checksum.algorithm.identifiesContent)
    }
}
