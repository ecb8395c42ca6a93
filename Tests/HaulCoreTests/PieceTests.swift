import HaulCore
import Testing

/// Requests in bounded pieces: each connection asks for its part a piece at a time, so a request
/// ends by itself and its connection (kept alive) carries the next one; a thief takes bytes nobody
/// asked for before it cuts a running request.
@Suite(.timeLimit(.minutes(2))) struct PieceTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)

    func machine(
        connections: Int, minimumSegment: Int64 = 100, maximumPiece: Int64 = 1 << 40,
        minimumSteal: Int64 = 10, sequential: Bool = false
    ) throws -> Machine {
        var request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        request.sequential = sequential
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: minimumSegment,
                minimumSteal: minimumSteal, checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25,
                piecesPerConnection: 4, maximumPiece: maximumPiece, httpVersions: .http1_1))
    }

    func partial(_ range: ByteRange, of total: Int64) -> ResponseHead {
        ResponseHead(
            status: 206,
            headers: ["Content-Range": "bytes \(range.start)-\(range.end ?? total - 1)/\(total)", "ETag": "\"a\""],
            url: "http://h/file")
    }

    func requests(_ actions: [Machine.Action]) -> [Int: RequestPlan] {
        var plans: [Int: RequestPlan] = [:]
        for action in actions { if case .request(let id, let plan) = action { plans[id] = plan } }
        return plans
    }

    func closes(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .close(let id) = $0 { id } else { nil } }
    }

    // MARK: The planner

    @Test func piecesAreAQuarterOfEachConnectionsShareWithinTheirBounds() {
        let mib: Int64 = 1 << 20
        #expect(
            SegmentPlanner.pieceSize(
                total: 1024 * mib, connections: 8, perConnection: 4, minimum: mib, maximum: 64 * mib) == 32 * mib)
        #expect(
            SegmentPlanner.pieceSize(
                total: 1024 * mib, connections: 64, perConnection: 4, minimum: mib, maximum: 64 * mib) == 4 * mib)
        #expect(
            SegmentPlanner.pieceSize(total: 3 * mib, connections: 8, perConnection: 4, minimum: mib, maximum: 64 * mib)
                == mib)
        #expect(
            SegmentPlanner.pieceSize(
                total: 100_000 * mib, connections: 8, perConnection: 4, minimum: mib, maximum: 64 * mib) == 64 * mib)
        // Before the length is known: the first piece.
        #expect(
            SegmentPlanner.pieceSize(total: nil, connections: 8, perConnection: 4, minimum: mib, maximum: 64 * mib)
                == mib)
        #expect(
            SegmentPlanner.pieceSize(
                total: 1024 * mib, connections: 8, perConnection: 0, minimum: mib, maximum: 64 * mib) == nil)
    }

    @Test func aRestUnderHalfAPieceGoesWithTheLastOne() {
        #expect(SegmentPlanner.pieceEnd(next: 0, partEnd: 999, size: 100) == 99)
        #expect(SegmentPlanner.pieceEnd(next: 900, partEnd: 999, size: 100) == 999)
        #expect(SegmentPlanner.pieceEnd(next: 860, partEnd: 999, size: 100) == 999) // 40 left after 959: taken along
        #expect(SegmentPlanner.pieceEnd(next: 800, partEnd: 999, size: 100) == 899)
        #expect(SegmentPlanner.pieceEnd(next: 950, partEnd: 999, size: 100) == 999)
        #expect(SegmentPlanner.pieceEnd(next: 0, partEnd: nil, size: 400) == 399)
    }

    // MARK: The machine

    @Test func theFirstRequestIsABoundedPieceAndItsConnectionCarriesTheNext() throws {
        var machine = try machine(connections: 4)
        let start = machine.start(noFiles, now: 0)
        let first = try #require(requests(start)[0]?.range)
        #expect(first == ByteRange(start: 0, end: 99)) // the 100-byte minimum
        let opened = machine.responseReceived(0, partial(first, of: 4000), nowSecondsSince1970: 0, jitter: 0)
        // The file is split evenly; the first part holds the piece it asked for.
        let plans = requests(opened)
        #expect(plans.count == 3)
        #expect(machine.owners.keys.sorted() == [0, 1000, 2000, 3000])
        #expect(plans[1]?.range == ByteRange(start: 1000, end: 1249)) // pieces of 4000 / 16 = 250
        // The first piece is read to its end, never cut: the body ends by itself.
        #expect(machine.received(0, count: 100).partComplete == false)
        let next = machine.bodyEnded(0, jitter: 0)
        #expect(
            next == [
                .request(
                    0, RequestPlan(url: url, range: ByteRange(start: 100, end: 349), ifRange: "\"a\"", headers: [:]))
            ])
    }

    @Test func aServerThatIgnoresRangesSendsTheWholeFileOnTheFirstConnection() throws {
        var machine = try machine(connections: 4)
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(
            0, ResponseHead(status: 200, headers: ["Content-Length": "1000"], url: "http://h/file"),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(requests(actions).isEmpty)
        var kept = 0
        for _ in 0..<10 {
            let accepted = machine.received(0, count: 100)
            kept += accepted.keep
            #expect(!accepted.partComplete)
        }
        #expect(kept == 1000)
        #expect(machine.bodyEnded(0, jitter: 0).contains(.verify(.part)))
    }

    /// A thief takes the tail nobody has asked for yet; the owner's running request goes on.
    @Test func aStealTakesBytesNotYetAskedForBeforeCuttingARequest() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        // 4000 bytes: parts 0-1999 and 2000-3999, pieces of 500.
        let opened = machine.responseReceived(
            0, partial(ByteRange(start: 0, end: 99), of: 4000), nowSecondsSince1970: 0, jitter: 0)
        let second = try #require(requests(opened)[1]?.range)
        #expect(second == ByteRange(start: 2000, end: 2499))
        _ = machine.responseReceived(1, partial(second, of: 4000), nowSecondsSince1970: 0, jitter: 0)
        // Connection 1 is slow; connection 0 runs through its part, piece by piece.
        _ = machine.received(1, count: 100)
        var actions: [Machine.Action] = []
        var range = ByteRange(start: 0, end: 99)
        while true {
            var left = range.end! - range.start + 1
            while left > 0 {
                let accepted = machine.received(0, count: Int(min(left, 100)))
                #expect(!accepted.partComplete)
                left -= Int64(accepted.keep)
            }
            _ = machine.tick(now: 1, elapsed: 1)
            actions = machine.bodyEnded(0, jitter: 0)
            guard let plan = requests(actions)[0], plan.range!.start < 2000 else { break }
            _ = machine.responseReceived(0, partial(plan.range!, of: 4000), nowSecondsSince1970: 0, jitter: 0)
            range = plan.range!
        }
        // Part 0 done: the steal starts past connection 1's running request (2000-2499).
        let stolen = try #require(requests(actions)[0]?.range)
        #expect(stolen.start >= 2500)
        #expect(closes(actions).isEmpty)
        // Connection 1 reads its whole piece: it is not cut.
        let rest = machine.received(1, count: 400)
        #expect(rest.keep == 400)
        #expect(!rest.partComplete)
    }

    /// With too few bytes left past the running requests, a fast thief still cuts a slow owner's
    /// request, so a straggler cannot hold the download back.
    @Test func aRunningRequestIsCutWhenTooLittleElseIsLeft() throws {
        var machine = try machine(connections: 2, minimumSteal: 400)
        _ = machine.start(noFiles, now: 0)
        // 1000 bytes: parts 0-499 and 500-999, pieces of 125.
        let opened = machine.responseReceived(
            0, partial(ByteRange(start: 0, end: 99), of: 1000), nowSecondsSince1970: 0, jitter: 0)
        let second = try #require(requests(opened)[1]?.range)
        #expect(second == ByteRange(start: 500, end: 624))
        _ = machine.responseReceived(1, partial(second, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(1, count: 10)
        _ = machine.received(0, count: 100)
        _ = machine.tick(now: 1, elapsed: 1) // 0 at 100 B/s, 1 at 10 B/s
        var actions = machine.bodyEnded(0, jitter: 0)
        while let plan = requests(actions)[0], plan.range!.start < 500 {
            _ = machine.responseReceived(0, partial(plan.range!, of: 1000), nowSecondsSince1970: 0, jitter: 0)
            _ = machine.received(0, count: Int(plan.range!.end! - plan.range!.start + 1))
            actions = machine.bodyEnded(0, jitter: 0)
        }
        // 375 bytes past connection 1's request (625-999) are under the 400 a steal must get:
        // its request is cut instead, where the speeds say.
        let stolen = try #require(requests(actions)[0]?.range)
        #expect(stolen.start > 510 && stolen.start <= 624)
        // The owner's body is stopped where its part now ends.
        let rest = machine.received(1, count: 114)
        #expect(rest.partComplete)
        #expect(Int64(rest.keep) == stolen.start - 510)
    }

    // MARK: The host's budget

    @Test func withNoConnectionToSpareTheFirstRequestWaitsForOne() throws {
        var machine = try machine(connections: 4)
        #expect(machine.setAllowance(0) == [])
        let start = machine.start(noFiles, now: 0)
        #expect(requests(start).isEmpty)
        #expect(machine.record.status == .running)
        let granted = machine.setAllowance(1)
        #expect(requests(granted)[0]?.range == ByteRange(start: 0, end: 99))
        // Ranges proven with only one allowed: no other connection yet.
        #expect(
            requests(
                machine.responseReceived(
                    0, partial(ByteRange(start: 0, end: 99), of: 4000), nowSecondsSince1970: 0,
                    jitter: 0)
            ).isEmpty)
        #expect(requests(machine.setAllowance(3)).count == 2)
        #expect(machine.connectionCount == 3)
    }

    /// A smaller allowance cuts no request: connections go where their pieces end, and their
    /// parts go to whoever finishes first.
    @Test func aSmallerAllowanceLetsConnectionsGoAtTheEndOfTheirPieces() throws {
        var machine = try machine(connections: 4)
        _ = machine.start(noFiles, now: 0)
        let opened = machine.responseReceived(
            0, partial(ByteRange(start: 0, end: 99), of: 4000), nowSecondsSince1970: 0, jitter: 0)
        for (id, plan) in requests(opened) {
            _ = machine.responseReceived(id, partial(plan.range!, of: 4000), nowSecondsSince1970: 0, jitter: 0)
        }
        #expect(machine.setAllowance(2) == [])
        #expect(machine.connectionCount == 4)
        _ = machine.received(3, count: 250)
        #expect(machine.bodyEnded(3, jitter: 0) == []) // its piece is done: it goes
        #expect(machine.connectionCount == 3)
        _ = machine.received(2, count: 250)
        #expect(machine.bodyEnded(2, jitter: 0) == [])
        #expect(machine.connectionCount == 2)
        _ = machine.received(1, count: 250)
        let next = requests(machine.bodyEnded(1, jitter: 0))
        #expect(next[1]?.range == ByteRange(start: 1250, end: 1499)) // within the allowance: next piece
        #expect(machine.owners[2000] == nil && machine.owners[3000] == nil)
    }

    // MARK: A whole download, simulated

    struct Outcome {
        var requests = 0
        var connectionIDs: Set<Int> = []
        var cuts = 0
        var seconds = 0.0
        var complete = false
    }

    /// Drives the machine over a whole download: every request answered at once, each connection
    /// receiving `speeds[id]` bytes per simulated second (the default for ids not listed), a tick
    /// every 0.25 s. Counts requests, connections and cut bodies.
    func simulate(
        total: Int64, connections: Int, speeds: [Int: Int64] = [:], defaultSpeed: Int64,
        minimumSegment: Int64
    ) throws -> Outcome {
        var machine = try machine(
            connections: connections, minimumSegment: minimumSegment, maximumPiece: 64 << 20,
            minimumSteal: 128 << 10)
        var outcome = Outcome()
        var pending: [Int: RequestPlan] = [:]
        var receiving: [Int: Int64] = [:] // id -> bytes left in its body
        func apply(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .request(let id, let plan):
                    outcome.requests += 1
                    outcome.connectionIDs.insert(id)
                    pending[id] = plan
                    receiving[id] = nil
                case .close(let id):
                    receiving[id] = nil
                    pending[id] = nil
                    outcome.cuts += 1
                    apply(machine.transferFailed(id, HaulError(.interrupted, "closed"), jitter: 0))
                case .verify:
                    outcome.complete = true
                default:
                    break
                }
            }
        }
        apply(machine.start(noFiles, now: 0))
        let step = 0.05
        var now = 0.0
        while !outcome.complete, now < 10_000 {
            for (id, plan) in pending.sorted(by: { $0.key < $1.key }) {
                pending[id] = nil
                let range = plan.range ?? ByteRange(start: 0)
                let end = min(range.end ?? total - 1, total - 1)
                receiving[id] = end - range.start + 1
                apply(
                    machine.responseReceived(
                        id, partial(ByteRange(start: range.start, end: end), of: total),
                        nowSecondsSince1970: 0, jitter: 0))
            }
            now += step
            for id in receiving.keys.sorted() {
                guard var left = receiving[id] else { continue }
                var budget = Int64(Double(speeds[id] ?? defaultSpeed) * step)
                var stopped = false
                while budget > 0, left > 0 {
                    let chunk = min(budget, left, 1 << 20)
                    let accepted = machine.received(id, count: Int(chunk))
                    budget -= chunk
                    left -= chunk
                    if accepted.partComplete {
                        stopped = true
                        break
                    }
                }
                if stopped {
                    if left > 0 { outcome.cuts += 1 }
                    receiving[id] = nil
                    apply(machine.bodyEnded(id, jitter: 0))
                } else if left == 0 {
                    receiving[id] = nil
                    apply(machine.bodyEnded(id, jitter: 0))
                } else {
                    receiving[id] = left
                }
            }
            if Int((now / step).rounded()) % 5 == 0 { apply(machine.tick(now: now, elapsed: 0.25)) }
        }
        outcome.seconds = now
        return outcome
    }

    @Test func eightEqualConnectionsOpenEightAndCutNothing() throws {
        let mib: Int64 = 1 << 20
        let outcome = try simulate(total: 1024 * mib, connections: 8, defaultSpeed: 50 * mib, minimumSegment: mib)
        #expect(outcome.complete)
        #expect(outcome.connectionIDs.count == 8)
        #expect(outcome.cuts == 0)
        // 8 parts of 128 MiB in pieces of 32 MiB, the first piece 4 MiB: about 33 requests.
        #expect(outcome.requests <= 40, "\(outcome.requests) requests")
    }

    /// Connections of different speeds: the fast ones take the slow ones' tails, each steal once,
    /// not steals of steals halving the last bytes into a request each.
    @Test func unevenConnectionsStealWithoutACascade() throws {
        let mib: Int64 = 1 << 20
        let speeds = Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, Int64(40 + 5 * $0) * mib) })
        let outcome = try simulate(
            total: 1024 * mib, connections: 8, speeds: speeds, defaultSpeed: 50 * mib, minimumSegment: mib)
        #expect(outcome.complete)
        #expect(outcome.cuts <= 2, "\(outcome.cuts) cut")
        #expect(outcome.requests <= 48, "\(outcome.requests) requests")
        let ideal = Double(1024 * mib) / Double(speeds.values.reduce(0, +))
        #expect(outcome.seconds <= ideal * 1.1 + 0.25, "\(outcome.seconds) s, ideal \(ideal) s")
    }

    /// One connection ten times slower than the rest: the others take its work, and the
    /// download takes at most 1.25 times the ideal (all bytes at the total speed).
    @Test func aStragglerCostsAtMostAQuarterMore() throws {
        let mib: Int64 = 1 << 20
        for connections in [2, 8, 16, 64] {
            let total = 1024 * mib
            let speed = 400 * mib / Int64(connections)
            let slow = speed / 10
            let outcome = try simulate(
                total: total, connections: connections, speeds: [1: slow], defaultSpeed: speed, minimumSegment: mib)
            let ideal = Double(total) / Double(speed * Int64(connections - 1) + slow)
            #expect(outcome.complete)
            #expect(
                outcome.seconds <= ideal * 1.25 + 0.5,
                "\(connections) connections: \(outcome.seconds) s, ideal \(ideal) s")
            #expect(outcome.connectionIDs.count <= connections)
        }
    }
}
