import Foundation
import HaulTesting
import Testing

@Suite(.timeLimit(.minutes(2))) struct PayloadTests {
    @Test func bytesAreDeterministicAndMatchByteAt() {
        let payload = Payload(seed: 42, length: 10_000)
        #expect(payload.bytes(0..<10_000) == Payload(seed: 42, length: 10_000).bytes(0..<10_000))
        #expect(payload.bytes(0..<64) != Payload(seed: 43, length: 10_000).bytes(0..<64))
        for range in [0..<10_000, 3..<5, 5..<21, 13..<77, 9_990..<10_000, 8..<16, 7..<7] as [Range<Int64>] {
            #expect(payload.bytes(range) == range.map { payload.byte(at: $0) }, "range \(range)")
        }
        // The first range's bytes are a prefix of a longer payload with the same seed.
        #expect(Payload(seed: 42, length: 20).bytes(0..<20) == payload.bytes(0..<20))
    }

    @Test func firstWordIsSplitMix64() {
        // splitmix64's first output for state 0 is 0xE220A8397B1DCDAF, stored little-endian.
        #expect(Payload(seed: 0, length: 8).bytes(0..<8) == [0xAF, 0xCD, 0x1D, 0x7B, 0x39, 0xA8, 0x20, 0xE2])
    }

    @Test func mismatchFindsCorruptionAndLengthDifferences() throws {
        let payload = Payload(seed: 9, length: 3_000_000)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }

        var data = Data(payload.bytes(0..<payload.length))
        try data.write(to: URL(fileURLWithPath: path))
        #expect(payload.mismatch(inFileAt: path) == nil)

        data[2_500_001] ^= 0xFF
        try data.write(to: URL(fileURLWithPath: path))
        let corrupted = try #require(payload.mismatch(inFileAt: path))
        #expect(corrupted.hasPrefix("first difference at offset 2500001: expected 0x"))

        try Data(payload.bytes(0..<1_000)).write(to: URL(fileURLWithPath: path))
        #expect(
            payload.mismatch(inFileAt: path)
                == "length mismatch: the file has 1000 bytes, expected 3000000 (the first 1000 bytes match)")

        try Data(payload.bytes(500..<1_500)).write(to: URL(fileURLWithPath: path))
        #expect(payload.mismatch(inFileAt: path, range: 500...1_499) == nil)
        let shifted = try #require(payload.mismatch(inFileAt: path, range: 501...1_500))
        #expect(shifted.hasPrefix("first difference at file offset 0 (payload offset 501)"))

        let missing = try #require(payload.mismatch(inFileAt: path + ".missing"))
        #expect(missing.hasPrefix("cannot open"))
    }
}
