import HaulCore
import Testing

/// `--sequential`: the first piece and the last first, then every connection in a window just
/// ahead of the first missing byte, so the file's contiguous prefix trails the bytes received by
/// at most 4 x connections x piece. Driven through the machine by a simulated server that answers
/// every request with its range and hands bytes to the connections in turns, one of them slow.
@Suite(.timeLimit(.minutes(2))) struct SequentialMachineTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let piece: Int64 = 100

    /// `PieceTests`' machine (pieces of `piece`, steals of at least 10 bytes), read in order or not.
    func machine(connections: Int, sequential: Bool) throws -> Machine {
        try PieceTests().machine(connections: connections, minimumSegment: piece, sequential: sequential)
    }

    /// What the simulated server saw and the file got.
    struct Run {
        var requests: [ByteRange] = []
        /// The most bytes received past the contiguous prefix, the tail left out.
        var worstLag: Int64 = 0
        var verified = false
        var storedParts = 0
    }

    /// Serves `total` bytes to the machine: each turn every connection with a request gets its
    /// response or `chunk` more bytes, except `slow`, which gets bytes only every `slowEvery`
    /// turns. Every byte must arrive once. A checkpoint (all delivered bytes durable) every turn.
    func serve(
        _ machine: inout Machine, total: Int64, chunk: Int64 = 25, slow: Int? = nil, slowEvery: Int = 8,
        tail: Int64? = nil
    ) throws -> Run {
        var run = Run()
        var delivered = [Bool](repeating: false, count: Int(total))
        var pending: [Int: (next: Int64, end: Int64, answered: Bool)] = [:]
        func apply(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .request(let id, let plan):
                    let range = plan.range ?? ByteRange(start: 0, end: nil)
                    run.requests.append(range)
                    pending[id] = (range.start, range.end ?? total - 1, false)
                case .close(let id):
                    pending[id] = nil
                case .verify:
                    run.verified = true
                default:
                    break
                }
            }
        }
        apply(machine.start(Machine.LocalFiles(partSize: nil, published: false), now: 0))
        var turn = 0
        while !run.verified, turn < 100_000 {
            turn += 1
            for id in pending.keys.sorted() {
                guard let request = pending[id] else { continue }
                if id == slow, turn % slowEvery != 0 { continue }
                if !request.answered {
                    pending[id]?.answered = true
                    let head = ResponseHead(
                        status: 206,
                        headers: ["Content-Range": "bytes \(request.next)-\(request.end)/\(total)", "ETag": "\"a\""],
                        url: url.description)
                    apply(machine.responseReceived(id, head, nowSecondsSince1970: 0, jitter: 0))
                    continue
                }
                let count = min(chunk, request.end - request.next + 1)
                let accepted = machine.received(id, count: Int(count))
                for offset in request.next..<(request.next + Int64(accepted.keep)) {
                    #expect(!delivered[Int(offset)], "byte \(offset) arrived twice")
                    delivered[Int(offset)] = true
                }
                pending[id]?.next += count
                if request.next + count > request.end {
                    pending[id] = nil
                    apply(machine.bodyEnded(id, jitter: 0))
                }
            }
            let prefix = Int64(delivered.firstIndex(of: false) ?? Int(total))
            let ahead = Int64(delivered.lastIndex(where: { $0 }).map { $0 + 1 } ?? 0)
            let lastOutsideTail =
                tail.map { limit in
                    Int64((delivered[..<Int(limit)].lastIndex(where: { $0 }) ?? -1) + 1)
                } ?? ahead
            run.worstLag = max(run.worstLag, lastOutsideTail - prefix)
            // Everything delivered is durable: the written end of every part is its delivered prefix.
            var written: [Int64: Int64] = [:]
            for segment in machine.persistentRecord.segments {
                var end = segment.start
                while end < total, delivered[Int(end)] { end += 1 }
                written[segment.start] = end
            }
            apply(machine.synced(epoch: machine.epoch, written: written))
        }
        #expect(delivered.allSatisfy { $0 }, "every byte arrives")
        run.storedParts = machine.persistentRecord.segments.count
        return run
    }

    // MARK: The planner

    @Test func theLeadIsFourWindowsPerConnection() {
        #expect(SequentialPlanner.lead(connections: 4, piece: 1 << 20) == 16 << 20)
        #expect(SequentialPlanner.mayTake(windowEnd: 1599, firstMissing: 0, connections: 4, piece: 100))
        #expect(!SequentialPlanner.mayTake(windowEnd: 1600, firstMissing: 0, connections: 4, piece: 100))
        #expect(SequentialPlanner.windowEnd(start: 900, end: 1040, piece: 100) == 1040) // a rest under half goes along
        #expect(SequentialPlanner.windowEnd(start: 900, end: 1050, piece: 100) == 999)
        #expect(SequentialPlanner.tailStart(first: 0, last: 9999, piece: 100) == 9900)
        #expect(SequentialPlanner.tailStart(first: 0, last: 199, piece: 100) == nil)
    }

    // MARK: The machine

    /// The first piece, then the last, then windows in order; a slow connection holds the
    /// prefix back, and the others wait for it (or help it) instead of running ahead. Every byte
    /// arrives once, and the stored layout merges back into a few parts.
    @Test func theFirstAndLastPiecesComeFirstAndThePrefixNeverTrailsByMoreThanTheLead() throws {
        var machine = try machine(connections: 4, sequential: true)
        let total: Int64 = 10_000
        let run = try serve(&machine, total: total, slow: 2, tail: total - piece)
        #expect(run.verified)
        #expect(run.requests.first == ByteRange(start: 0, end: 99))
        #expect(run.requests.dropFirst().first == ByteRange(start: 9900, end: 9999))
        // The windows after them start in order while nothing fails.
        let windows = run.requests.dropFirst(2).filter { $0.start < 9900 }
        #expect(windows.prefix(3).map(\.start) == [100, 200, 300])
        #expect(run.worstLag <= SequentialPlanner.lead(connections: 4, piece: piece))
        #expect(run.worstLag > 0)
        #expect(run.storedParts <= 2, "finished parts merge: \(run.storedParts) left")
    }

    /// Without `--sequential` the same download splits the file evenly: the bytes received run
    /// far ahead of the prefix (what the test above rules out).
    @Test func withoutItTheConnectionsSpreadOverTheFile() throws {
        var machine = try machine(connections: 4, sequential: false)
        let total: Int64 = 10_000
        let run = try serve(&machine, total: total, slow: 2)
        #expect(run.verified)
        #expect(run.worstLag > SequentialPlanner.lead(connections: 4, piece: piece))
    }

    /// One connection reads in order with no window to cut: one request for the whole file.
    @Test func oneConnectionReadsTheWholeFileInOneRequest() throws {
        var machine = try machine(connections: 1, sequential: true)
        let run = try serve(&machine, total: 1000)
        #expect(run.verified)
        #expect(run.requests == [ByteRange(start: 0, end: nil)])
    }

    /// The sequential setting is kept in the stored form, and a record stored without it reads
    /// as not sequential.
    @Test func theSettingIsStored() throws {
        var request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: 4)
        request.sequential = true
        let record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        let json = StoredRecord.json(record)
        #expect(json.contains("\"sequential\":true"))
        #expect(try StoredRecord.record(fromJSON: json).request.sequential)
        request.sequential = false
        let plain = StoredRecord.json(DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0))
        #expect(plain.contains("\"sequential\":false"))
        #expect(try !StoredRecord.record(fromJSON: plain).request.sequential)
    }
}
