import Foundation
@testable import Haul
import HaulCore
import NIOCore
import Testing

/// The real writer on a real file: positional writes per part, what a checkpoint claims, and
/// what a truncation drops.
@Suite(.timeLimit(.minutes(1))) struct FileChunkWriterTests {
    private func temporaryFile() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("haul-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("f.part").path
    }

    /// The writer of the `.part` at `path`, opened as a run opens it: through its directory.
    private func writer(_ path: String, batchSize: Int = FileChunkWriter.batchSize(connections: 1)) throws -> FileChunkWriter {
        let (directory, name) = Paths.split(path)
        let opened = try #require(try DownloadDirectory.resolve(directory, roots: nil, create: true))
        return try FileChunkWriter(directory: opened, name: try #require(name), exclusive: false, batchSize: batchSize)
    }

    private func bytes(_ value: UInt8, _ count: Int) -> ByteBuffer {
        ByteBuffer(bytes: [UInt8](repeating: value, count: count))
    }

    @Test func partsLandAtTheirOffsetsAndACheckpointClaimsWhatIsOnDisk() async throws {
        let path = try temporaryFile()
        let writer = try writer(path, batchSize: 64)
        // Two parts, written interleaved, the second one before the first.
        try await writer.write(bytes(2, 30), at: 100, part: 100)
        try await writer.write(bytes(1, 50), at: 0, part: 0)
        try await writer.write(bytes(2, 50), at: 130, part: 100)  // fills a batch: written now
        try await writer.write(bytes(1, 10), at: 50, part: 0)     // pending
        #expect(try await writer.read(at: 55, count: 10) == [UInt8](repeating: 1, count: 5) + [UInt8](repeating: 0, count: 5))
        #expect(try await writer.checkpoint() == [0: 60, 100: 180])
        await writer.close()
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data.count == 180)
        #expect(data[0..<60].allSatisfy { $0 == 1 })
        #expect(data[60..<100].allSatisfy { $0 == 0 })  // never written: a hole
        #expect(data[100..<180].allSatisfy { $0 == 2 })
    }

    @Test func aJumpInAPartWritesWhatCameBefore() async throws {
        let path = try temporaryFile()
        let writer = try writer(path, batchSize: 1 << 20)
        try await writer.write(bytes(1, 10), at: 0, part: 0)
        try await writer.write(bytes(3, 10), at: 40, part: 0)  // not back to back
        #expect(try await writer.checkpoint() == [0: 50])
        await writer.close()
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(data[0..<10]) == [UInt8](repeating: 1, count: 10))
        #expect(Array(data[40..<50]) == [UInt8](repeating: 3, count: 10))
    }

    @Test func aTruncationDropsWhatIsPending() async throws {
        let path = try temporaryFile()
        let writer = try writer(path, batchSize: 1 << 20)
        try await writer.write(bytes(1, 100), at: 0, part: 0)
        _ = try await writer.checkpoint()
        try await writer.write(bytes(2, 100), at: 100, part: 0)  // pending only
        try await writer.truncate(to: 0)
        #expect(try await writer.checkpoint() == [:])
        try await writer.write(bytes(4, 20), at: 0, part: 0)
        #expect(try await writer.checkpoint() == [0: 20])
        await writer.close()
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data == [UInt8](repeating: 4, count: 20))
    }

    @Test func aWriteAfterCloseIsAnErrorNotALostByte() async throws {
        let path = try temporaryFile()
        let writer = try writer(path)
        await writer.close()
        await #expect(throws: (any Error).self) { try await writer.write(bytes(1, 10), at: 0, part: 0) }
    }
}
