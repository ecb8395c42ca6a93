import Foundation
import HaulCore
import HaulTesting
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Haul

/// The real writer on a real file: positional writes per part, what a checkpoint claims, what
/// a truncation drops; a disk that holds writes back (through `FileCalls`), and what the writer
/// does meanwhile.
@Suite(.timeLimit(.minutes(1))) struct FileChunkWriterTests {
    private func temporaryFile() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "haul-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("f.part").path
    }

    /// The writer of the `.part` at `path`, opened as a run opens it: through its directory, with
    /// lanes of its own; on `clock`, and counting in `waits` the calls that waited for the disk.
    private func withWriter(
        _ path: String, batchSize: Int = FileChunkWriter.batchSize(connections: 1), calls: FileCalls = .system,
        clock: ManualClock = ManualClock(), waits: Watched<Int> = Watched(0),
        _ body: (FileChunkWriter) async throws -> Void
    ) async throws {
        let (directory, name) = Paths.split(path)
        let opened = try #require(try DownloadDirectory.resolve(directory, roots: nil, create: true))
        let writer = try await FileChunkWriter.open(
            in: opened, name: try #require(name), exclusive: false, batchSize: batchSize,
            io: DiskIO(calls: calls), clock: ClockAdapter(clock), waited: { waits.withLockedValue { $0 += 1 } })
        try await body(writer)
    }

    private func bytes(_ value: UInt8, _ count: Int) -> ByteBuffer {
        ByteBuffer(bytes: [UInt8](repeating: value, count: count))
    }

    @Test func partsLandAtTheirOffsetsAndACheckpointClaimsWhatIsOnDisk() async throws {
        let path = try temporaryFile()
        try await withWriter(path, batchSize: 64) { writer in
            // Two parts, written interleaved, the second one before the first.
            try await writer.write(bytes(2, 30), at: 100, part: 100)
            try await writer.write(bytes(1, 50), at: 0, part: 0)
            try await writer.write(bytes(2, 50), at: 130, part: 100) // fills a batch: handed to the disk
            try await writer.write(bytes(1, 10), at: 50, part: 0) // pending
            #expect(
                try await writer.read(at: 55, count: 10) == [UInt8](repeating: 1, count: 5)
                    + [UInt8](repeating: 0, count: 5))
            #expect(try await writer.checkpoint() == [0: 60, 100: 180])
            try await writer.close()
        }
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data.count == 180)
        #expect(data[0..<60].allSatisfy { $0 == 1 })
        #expect(data[60..<100].allSatisfy { $0 == 0 }) // never written: a hole
        #expect(data[100..<180].allSatisfy { $0 == 2 })
    }

    /// A slow download's small chunks do not wait for a full batch (or the next checkpoint):
    /// once the first has waited `maxHoldNanoseconds` (on the writer's clock, here a manual one),
    /// the next chunk hands them all over.
    @Test func aBatchThatFillsSlowlyGoesToTheDiskAnyway() async throws {
        let path = try temporaryFile()
        let clock = ManualClock()
        // The bytes the disk has taken, counted as each write returns.
        let written = Watched(0)
        var calls = FileCalls.system
        calls.write = { descriptor, vectors, count, offset, path in
            let result = FileCalls.system.write(descriptor, vectors, count, offset, path)
            written.withLockedValue { $0 += max(result, 0) }
            return result
        }
        try await withWriter(path, batchSize: 1 << 20, calls: calls, clock: clock) { writer in
            try await writer.write(bytes(1, 10), at: 0, part: 0)
            clock.advance(by: .nanoseconds(FileChunkWriter.maxHoldNanoseconds))
            try await writer.write(bytes(2, 10), at: 10, part: 0)
            // Written by the writing thread with no flush asked for.
            #expect(await written.wait { $0 >= 20 })
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 20)
            try await writer.close()
        }
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data == [UInt8](repeating: 1, count: 10) + [UInt8](repeating: 2, count: 10))
    }

    @Test func aJumpInAPartWritesWhatCameBefore() async throws {
        let path = try temporaryFile()
        try await withWriter(path, batchSize: 1 << 20) { writer in
            try await writer.write(bytes(1, 10), at: 0, part: 0)
            try await writer.write(bytes(3, 10), at: 40, part: 0) // not back to back
            #expect(try await writer.checkpoint() == [0: 50])
            try await writer.close()
        }
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(data[0..<10]) == [UInt8](repeating: 1, count: 10))
        #expect(Array(data[40..<50]) == [UInt8](repeating: 3, count: 10))
    }

    @Test func aTruncationDropsWhatIsPending() async throws {
        let path = try temporaryFile()
        try await withWriter(path, batchSize: 1 << 20) { writer in
            try await writer.write(bytes(1, 100), at: 0, part: 0)
            _ = try await writer.checkpoint()
            try await writer.write(bytes(2, 100), at: 100, part: 0) // pending only
            try await writer.truncate(to: 0)
            #expect(try await writer.checkpoint() == [:])
            try await writer.write(bytes(4, 20), at: 0, part: 0)
            #expect(try await writer.checkpoint() == [0: 20])
            try await writer.close()
        }
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data == [UInt8](repeating: 4, count: 20))
    }

    @Test func aWriteAfterCloseIsAnErrorNotALostByte() async throws {
        let path = try temporaryFile()
        try await withWriter(path) { writer in
            try await writer.close()
            await #expect(throws: (any Error).self) { try await writer.write(bytes(1, 10), at: 0, part: 0) }
        }
    }

    /// A disk that holds the first batch back: the connection goes on handing batches over
    /// (it never waits for one write), up to `maxQueuedBytes` unwritten, then waits; once the disk
    /// answers every byte lands where it belongs.
    @Test func aConnectionReadsABoundedAmountAheadOfAHeldDisk() async throws {
        let path = try temporaryFile()
        let gate = Gate()
        var calls = FileCalls.system
        calls.write = { descriptor, vectors, count, offset, path in
            gate.pass(path)
            return FileCalls.system.write(descriptor, vectors, count, offset, path)
        }
        let batch = 64 << 10
        let batches = 2 * FileChunkWriter.maxQueuedBytes / batch
        let waits = Watched(0)
        try await withWriter(path, batchSize: batch, calls: calls, waits: waits) { writer in
            let accepted = NIOLockedValueBox(0)
            let connection = Task {
                for index in 0..<batches {
                    try await writer.write(bytes(UInt8(index % 251), batch), at: Int64(index * batch), part: 0)
                    accepted.withLockedValue { $0 += batch }
                }
            }
            await gate.waitForArrivals { !$0.isEmpty }
            await waits.wait { $0 >= 1 }
            #expect(gate.arrivals.count == 1 && writer.waitingCalls == 1, "the connection waits for the held disk")
            let ahead = accepted.withLockedValue { $0 } + batch // the waiting call's batch too
            #expect(ahead >= 3 * batch, "handing a batch over does not wait for its write")
            #expect(ahead <= FileChunkWriter.maxQueuedBytes + batch, "read \(ahead) bytes ahead of the disk")
            gate.open()
            try await connection.value
            #expect(try await writer.checkpoint() == [0: Int64(batches * batch)])
            try await writer.close()
        }
        #expect(!gate.expired)
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data.count == batches * batch)
        for index in 0..<batches {
            #expect(
                data[(index * batch)..<((index + 1) * batch)].allSatisfy { $0 == UInt8(index % 251) }, "batch \(index)")
        }
    }

    /// A checkpoint's fsync held by the disk: `close` (or `discard`) waits for it, so the
    /// descriptor it syncs can never be closed, or reused for another file, under it.
    @Test(arguments: [false, true]) func aFileIsNeverClosedUnderARunningFsync(discarding: Bool) async throws {
        let path = try temporaryFile()
        let gate = Gate()
        let log = NIOLockedValueBox<[String]>([])
        var calls = FileCalls.system
        calls.sync = { descriptor, path in
            log.withLockedValue { $0.append("sync") }
            gate.pass(path)
            let result = FileCalls.system.sync(descriptor, path)
            log.withLockedValue { $0.append("synced") }
            return result
        }
        calls.close = { descriptor, path in
            log.withLockedValue { $0.append("close") }
            return FileCalls.system.close(descriptor, path)
        }
        let waits = Watched(0)
        try await withWriter(path, calls: calls, waits: waits) { writer in
            try await writer.write(bytes(7, 1000), at: 0, part: 0)
            let checkpoint = Task { try await writer.checkpoint() }
            #expect(await gate.waitForArrivals { $0.count == 1 })
            // The checkpoint's flush may have waited for its write; the close's wait comes next.
            let before = waits.value
            let closing = Task { discarding ? try await writer.discard() : try await writer.close() }
            await waits.wait { $0 > before }
            #expect(writer.waitingCalls == 1, "the close waits")
            #expect(log.withLockedValue { $0 } == ["sync"], "nothing closed while the fsync runs")
            gate.open()
            try await closing.value
            #expect(try await checkpoint.value == [0: 1000])
        }
        #expect(log.withLockedValue { $0 } == ["sync", "synced", "close"])
        #expect(!gate.expired)
    }

    /// A write the disk refuses (no space) is not lost with the connection that handed it over:
    /// the next checkpoint and the next write throw it.
    @Test func aFailedWriteIsThrownByTheNextCalls() async throws {
        let path = try temporaryFile()
        var calls = FileCalls.system
        calls.write = { _, _, _, _, _ in
            errno = ENOSPC
            return -1
        }
        try await withWriter(path, batchSize: 100, calls: calls) { writer in
            try await writer.write(bytes(1, 100), at: 0, part: 0) // a full batch: handed over
            await #expect { _ = try await writer.checkpoint() } throws: { ($0 as? HaulError)?.code == .diskFull }
            await #expect { try await writer.write(bytes(1, 10), at: 100, part: 0) } throws: {
                ($0 as? HaulError)?.code == .diskFull
            }
            await #expect { try await writer.close() } throws: { ($0 as? HaulError)?.code == .diskFull }
        }
    }
}
