import HaulCore
import Testing

@testable import HaulServer

/// aria2's `bitfield`: one bit per MiB piece, set when the piece's every byte is written, checked
/// against a byte map of small blocks on random layouts of written parts.
@Suite(.timeLimit(.minutes(1))) struct Aria2BitfieldTests {
    static let block: Int64 = 64 << 10
    static let piece = Aria2Status.pieceLength

    /// A running download of `total` bytes whose parts (start, length, written) are as given;
    /// `base` is the start of a requested range.
    func status(total: Int64, base: Int64 = 0, parts: [(start: Int64, written: Int64)], completed: Bool = false) throws
        -> Aria2Status
    {
        var request = try DownloadRequest(url: RemoteURL("http://example.com/f"), destination: .directory("/tmp"))
        if base > 0 { request.range = ByteRange(start: base, end: base + total - 1) }
        var record = DownloadRecord(id: DownloadID(rawValue: "0011223344556677"), request: request, createdAt: 0)
        record.status = completed ? .completed : .running
        record.totalLength = base + total
        let starts = parts.map(\.start) + [total]
        record.segments = parts.enumerated().map { n, part in
            Segment(start: base + part.start, end: base + starts[n + 1] - 1, written: part.written)
        }
        return Aria2Status(record, live: nil)
    }

    /// What the bits must say: a piece is complete when every block of it is written.
    func expected(total: Int64, parts: [(start: Int64, written: Int64)]) -> [Bool] {
        var written = [Bool](repeating: false, count: Int((total + Self.block - 1) / Self.block))
        for part in parts {
            for block in stride(from: part.start, to: part.start + part.written, by: Int(Self.block)) {
                written[Int(block / Self.block)] = true
            }
        }
        let pieces = (total + Self.piece - 1) / Self.piece
        return (0..<pieces).map { piece in
            let first = piece * Self.piece / Self.block
            let end = min(total, (piece + 1) * Self.piece)
            return (first..<((end + Self.block - 1) / Self.block)).allSatisfy { written[Int($0)] }
        }
    }

    func bits(_ hex: String, pieces: Int) -> [Bool] {
        let bytes = Array(hex.utf8).map { Int(String(UnicodeScalar($0)), radix: 16)! }
        return (0..<pieces).map { bytes[$0 / 4] & (8 >> ($0 % 4)) != 0 }
    }

    @Test func randomLayoutsMatchTheByteMap() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            // Block-aligned lengths, so the byte map is exact; every other round a partial last piece.
            let total = Int64.random(in: 1...40, using: &generator) * Self.piece / 2 + (round % 2 == 0 ? 0 : Self.block)
            let cuts = Set(
                (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                    Int64.random(in: 1..<(total / Self.block), using: &generator) * Self.block
                })
            let starts = [0] + cuts.sorted()
            let parts = starts.enumerated().map { n, start in
                let length = (n + 1 < starts.count ? starts[n + 1] : total) - start
                let blocks = Int64.random(in: 0...(length / Self.block), using: &generator)
                return (start: start, written: min(length, blocks * Self.block))
            }
            let want = expected(total: total, parts: parts)
            for base: Int64 in [0, 7 * Self.block] {
                let status = try status(total: total, base: base, parts: parts)
                #expect(
                    bits(status.bitfield(pieces: Int64(want.count)), pieces: want.count) == want,
                    "total \(total), parts \(parts), base \(base)")
            }
        }
    }

    @Test func aPieceAcrossTwoWrittenPartsIsComplete() throws {
        // Parts split at 1.5 MiB, both written through: pieces 0 and 1 are whole.
        let half = Self.piece / 2
        let status = try status(total: 3 * Self.piece, parts: [(0, 3 * half), (3 * half, 2 * half)])
        #expect(status.bitfield(pieces: 3) == "c0")
    }

    @Test func aCompletedDownloadIsAllOnesUpToItsLastPiece() throws {
        let status = try status(total: 10 * Self.piece + 1, parts: [(0, 0)], completed: true)
        #expect(status.bitfield(pieces: 11) == "ffe0")
    }
}
