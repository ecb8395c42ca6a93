import NIOCore
import Testing

@testable import Haul

/// What the transport hands the writer pins no more memory than about twice its bytes: a small
/// slice of a large storage (a TLS handler's plaintext buffer) is copied, a chunk that fills its
/// storage is not.
@Suite(.timeLimit(.minutes(1))) struct BodyChunkTests {
    @Test func aSmallSliceOfALargeStorageIsCopiedIntoItsOwnSize() {
        var large = ByteBufferAllocator().buffer(capacity: 256 << 10)
        large.writeBytes((0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let slice = large.getSlice(at: 1000, length: 16 << 10)!
        #expect(slice.storageCapacity >= 256 << 10)
        let chunk = AsyncHTTPBody.compacted(slice)
        #expect(chunk == slice, "the same bytes")
        #expect(chunk.storageCapacity <= 2 * chunk.readableBytes)
    }

    @Test func aChunkThatFillsItsStorageIsPassedOnAsItIs() {
        var full = ByteBufferAllocator().buffer(capacity: 64 << 10)
        full.writeBytes([UInt8](repeating: 9, count: 60 << 10))
        let chunk = AsyncHTTPBody.compacted(full)
        let same = full.withUnsafeReadableBytes { a in
            chunk.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress }
        }
        #expect(same, "no copy")
    }
}
