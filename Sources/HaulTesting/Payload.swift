import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Deterministic content: any byte at any offset can be computed, so any range can be checked
/// without fixture files.
///
/// Tests describe a download as `(seed, length)` instead of shipping files: the server streams
/// the bytes on demand (so multi-gigabyte payloads cost no memory or disk), and a test checks the
/// downloaded file, or any slice of it, against the same description.
///
/// Every aligned 8-byte word is `splitmix64(seed &+ wordIndex)` stored little-endian, so a byte
/// costs one hash and bulk generation costs one hash per 8 bytes.
public struct Payload: Sendable, Hashable {
    /// Selects the content; different seeds give unrelated bytes.
    public let seed: UInt64
    /// The number of bytes in the payload.
    public let length: Int64
    /// Bytes served wrong (each inverted), as by a mirror with a bad disk sector: nil for none.
    public let damaged: Range<Int64>?

    /// Creates a payload; `length` must not be negative.
    public init(seed: UInt64, length: Int64) {
        precondition(length >= 0, "Payload length must not be negative")
        self.seed = seed
        self.length = length
        self.damaged = nil
    }

    private init(seed: UInt64, length: Int64, damaged: Range<Int64>) {
        self.seed = seed
        self.length = length
        self.damaged = damaged
    }

    /// The same payload with the bytes of `range` inverted (the same seed, length and ETag).
    public func damaging(_ range: Range<Int64>) -> Payload {
        checkRange(range)
        return Payload(seed: seed, length: length, damaged: range)
    }

    /// The byte at `offset`, which must be in `0..<length`.
    @inlinable
    public func byte(at offset: Int64) -> UInt8 {
        precondition(offset >= 0 && offset < length, "offset \(offset) is outside the payload (length \(length))")
        let word = Payload.word(seed: seed, index: offset >> 3)
        let byte = UInt8(truncatingIfNeeded: word >> (UInt64(offset & 7) &* 8))
        return damaged?.contains(offset) == true ? ~byte : byte
    }

    /// The bytes in `range`, which must lie within `0...length`.
    public func bytes(_ range: Range<Int64>) -> [UInt8] {
        checkRange(range)
        let count = Int(range.upperBound - range.lowerBound)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer), with: range)
            initialized = count
        }
    }

    /// Appends the bytes in `range` (within `0...length`) to `buffer`.
    ///
    /// This is the server's fast path: it fills the buffer's storage directly, one hash per
    /// 8 bytes, without an intermediate array.
    public func write(_ range: Range<Int64>, into buffer: inout ByteBuffer) {
        checkRange(range)
        let count = Int(range.upperBound - range.lowerBound)
        guard count > 0 else { return }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
            fill(UnsafeMutableRawBufferPointer(rebasing: pointer[0..<count]), with: range)
            return count
        }
    }

    /// Reads the file at `path` and compares it with the payload (or with `range` of the payload
    /// when given).
    ///
    /// Returns nil when identical, else a human-readable description of the first difference
    /// (length mismatch or first differing offset), so a test can write
    /// `#expect(payload.mismatch(inFileAt: path) == nil)` and get a useful failure message.
    /// The file is read in 1 MiB blocks, so large downloads can be checked in flat memory.
    public func mismatch(inFileAt path: String, range: ClosedRange<Int64>? = nil) -> String? {
        let expected: Range<Int64>
        if let range {
            guard range.lowerBound >= 0, range.upperBound < length else {
                return "range \(range.lowerBound)...\(range.upperBound) is outside the payload (length \(length))"
            }
            expected = range.lowerBound..<(range.upperBound + 1)
        } else {
            expected = 0..<length
        }
        let expectedCount = expected.upperBound - expected.lowerBound

        guard let file = fopen(path, "rb") else {
            return "cannot open \(path): \(String(cString: strerror(errno)))"
        }
        defer { fclose(file) }
        guard fseeko(file, 0, SEEK_END) == 0 else {
            return "cannot read \(path): \(String(cString: strerror(errno)))"
        }
        let fileCount = Int64(ftello(file))
        rewind(file)

        let lengthNote =
            fileCount == expectedCount
            ? ""
            : "; the file also has \(fileCount) bytes, expected \(expectedCount)"
        let blockSize = 1 << 20
        var actual = [UInt8](repeating: 0, count: blockSize)
        var position: Int64 = 0
        let comparable = min(fileCount, expectedCount)
        while position < comparable {
            let want = Int(min(Int64(blockSize), comparable - position))
            let got = actual.withUnsafeMutableBytes { fread($0.baseAddress, 1, want, file) }
            guard got == want else {
                return "cannot read \(path) at offset \(position + Int64(got)): the file changed while being read"
            }
            let reference = bytes((expected.lowerBound + position)..<(expected.lowerBound + position + Int64(want)))
            let equal = actual.withUnsafeBytes { a in
                reference.withUnsafeBytes { r in memcmp(a.baseAddress!, r.baseAddress!, want) == 0 }
            }
            if !equal {
                let index = (0..<want).first { actual[$0] != reference[$0] }!
                let fileOffset = position + Int64(index)
                let payloadOffset = expected.lowerBound + fileOffset
                let place =
                    range == nil
                    ? "offset \(fileOffset)"
                    : "file offset \(fileOffset) (payload offset \(payloadOffset))"
                return "first difference at \(place): expected \(hex(reference[index])), found \(hex(actual[index]))"
                    + lengthNote
            }
            position += Int64(want)
        }
        if fileCount != expectedCount {
            return "length mismatch: the file has \(fileCount) bytes, expected \(expectedCount)"
                + " (the first \(comparable) bytes match)"
        }
        return nil
    }

    // MARK: - Generation

    @usableFromInline
    static func word(seed: UInt64, index: Int64) -> UInt64 {
        // splitmix64: a cheap, well-mixed hash, so neighbouring words and seeds look unrelated.
        var z = (seed &+ UInt64(bitPattern: index)) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private func checkRange(_ range: Range<Int64>) {
        precondition(
            range.lowerBound >= 0 && range.upperBound <= length,
            "range \(range) is outside the payload (length \(length))"
        )
    }

    /// Fills `destination` (exactly `range.count` bytes) with the payload bytes in `range`.
    private func fill(_ destination: UnsafeMutableRawBufferPointer, with range: Range<Int64>) {
        fillUndamaged(destination, with: range)
        guard let damaged, damaged.overlaps(range) else { return }
        for offset in max(damaged.lowerBound, range.lowerBound)..<min(damaged.upperBound, range.upperBound) {
            let index = Int(offset - range.lowerBound)
            destination[index] = ~destination[index]
        }
    }

    private func fillUndamaged(_ destination: UnsafeMutableRawBufferPointer, with range: Range<Int64>) {
        var offset = range.lowerBound
        var index = 0
        // Leading partial word.
        while offset < range.upperBound && offset & 7 != 0 {
            let word = Payload.word(seed: seed, index: offset >> 3)
            destination[index] = UInt8(truncatingIfNeeded: word >> (UInt64(offset & 7) &* 8))
            offset += 1
            index += 1
        }
        // Whole words.
        while range.upperBound - offset >= 8 {
            let word = Payload.word(seed: seed, index: offset >> 3)
            destination.storeBytes(of: word.littleEndian, toByteOffset: index, as: UInt64.self)
            offset += 8
            index += 8
        }
        // Trailing partial word.
        if offset < range.upperBound {
            let word = Payload.word(seed: seed, index: offset >> 3)
            var shift: UInt64 = 0
            while offset < range.upperBound {
                destination[index] = UInt8(truncatingIfNeeded: word >> shift)
                shift += 8
                offset += 1
                index += 1
            }
        }
    }

    private func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }
}
