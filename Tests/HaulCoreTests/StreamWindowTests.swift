import HaulCore
import Testing

/// The window of `haul get -o -`: bytes go out in order whatever order the connections bring
/// them in, at most `capacity` bytes wait, and a chunk past that or over another is refused.
@Suite(.timeLimit(.minutes(1))) struct StreamWindowTests {
    func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8(truncatingIfNeeded: $0 * 7) } }

    func flat(_ chunks: [any ByteChunk]) -> [UInt8] {
        chunks.flatMap { chunk in chunk.withUnsafeBytes { Array($0) } }
    }

    /// Four connections' chunks in a shuffled order: the stream is the file, byte for byte, and
    /// never more than the capacity waits.
    @Test func chunksInAnyOrderGoOutInOrder() throws {
        let file = bytes(0..<4000)
        var window = StreamWindow(capacity: 1000)
        var order = Array(stride(from: 0, to: 4000, by: 100))
        var generator = SplitMix(seed: 49)
        order.shuffle(using: &generator)
        var out: [UInt8] = []
        var pending = order
        while !pending.isEmpty {
            // Like a connection, a chunk past the window waits its turn.
            let index = try #require(pending.firstIndex { window.admits(offset: Int64($0), count: 100) })
            let offset = pending.remove(at: index)
            out += flat(try window.take(Array(file[offset..<offset + 100]), at: Int64(offset)))
            #expect(window.heldBytes <= 1000)
            #expect(window.sent == Int64(out.count))
        }
        #expect(out == file)
        #expect(window.heldBytes == 0)
    }

    @Test func bytesAlreadySentAreDroppedAndOverlapsRefused() throws {
        let file = bytes(0..<300)
        var window = StreamWindow(capacity: 1000, start: 0)
        #expect(flat(try window.take(Array(file[0..<100]), at: 0)) == Array(file[0..<100]))
        // A request that re-read 50 bytes before its resume point: only the new ones go out.
        #expect(flat(try window.take(Array(file[50..<150]), at: 50)) == Array(file[100..<150]))
        #expect(try window.take(Array(file[200..<300]), at: 200).isEmpty)
        #expect(throws: HaulError.self) { try window.take(Array(file[250..<280]), at: 250) }
        #expect(throws: HaulError.self) { try window.take(Array(file[150..<220]), at: 150) }
        #expect(!window.admits(offset: 1200, count: 1))
        #expect(throws: HaulError.self) { try window.take([1], at: 1200) }
        #expect(flat(try window.take(Array(file[150..<200]), at: 150)) == Array(file[150..<300]))
    }
}

/// A seeded generator, so a shuffle is the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
