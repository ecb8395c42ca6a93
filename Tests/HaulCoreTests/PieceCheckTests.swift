import HaulCore
import Testing

/// Piece digests (a Metalink's `<pieces>`), with plain values: a piece that fails is fetched
/// again, not the file; a piece one mirror wrote alone convicts that mirror; pieces that keep
/// failing fail the download with the bad bytes unclaimed.
@Suite(.timeLimit(.minutes(1))) struct PieceCheckTests {
    typealias Machine = DownloadStateMachine
    let primary = try! RemoteURL("http://a/file")
    let mirror = try! RemoteURL("http://b/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)
    let total: Int64 = 3_000
    let hash = String(repeating: "0", count: 64)

    func machine(mirrors: [RemoteURL], connections: Int = 1) throws -> Machine {
        var request = try DownloadRequest(
            url: primary, destination: .directory("/tmp"), connections: connections, mirrors: mirrors)
        request.pieceHashes = try PieceHashes(length: 1_000, algorithm: .sha256, hashes: [hash, hash, hash])
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 4,
                httpVersions: .http1_1))
    }

    /// What a run of the machine asked of which server, until it asks for a verification.
    struct Run {
        /// Per URL, the bytes it was asked to write (probes not counted).
        var written: [String: [ByteRange]] = [:]
        var probes: [String: Int] = [:]
        var actions: [Machine.Action] = []
        var verifying: Bool { actions.contains { if case .verify = $0 { true } else { false } } }
    }

    /// Answers every request as a server of `total` bytes with ranges would, until the machine
    /// verifies or fails.
    func serve(_ machine: inout Machine, _ first: [Machine.Action]) -> Run {
        var run = Run()
        var pending = first
        var plans: [Int: RequestPlan] = [:]
        while !pending.isEmpty {
            let action = pending.removeFirst()
            run.actions.append(action)
            switch action {
            case .request(let id, let plan):
                plans[id] = plan
                let start = plan.range?.start ?? 0
                let end = plan.range?.end ?? total - 1
                // No range asked: the whole file, as a server does (ranges are then not proven).
                let head =
                    plan.range == nil
                    ? ResponseHead(
                        status: 200, headers: ["Content-Length": "\(total)", "ETag": "\"e\""],
                        url: plan.url.absoluteString)
                    : ResponseHead(
                        status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/\(total)", "ETag": "\"e\""],
                        url: plan.url.absoluteString)
                pending += machine.responseReceived(id, head, nowSecondsSince1970: 0, jitter: 0)
            case .receive(let id):
                let plan = plans[id]!
                let count = Int((plan.range?.end ?? total - 1) - (plan.range?.start ?? 0) + 1)
                let accepted = machine.received(id, count: count)
                if accepted.keep > 0 {
                    run.written[plan.url.absoluteString, default: []].append(
                        ByteRange(
                            start: Int64(accepted.writeOffset),
                            end: Int64(accepted.writeOffset) + Int64(accepted.keep) - 1))
                } else if accepted.compare > 0 {
                    run.probes[plan.url.absoluteString, default: 0] += 1
                }
                pending += machine.bodyEnded(id, jitter: 0)
            case .close(let id):
                pending += machine.transferFailed(id, HaulError(.interrupted, "closed"), jitter: 0)
            default:
                break
            }
        }
        return run
    }

    @Test func aSoleWriterIsTheOneBitOfItsSet() {
        #expect(SourceSet.soleWriter(0) == nil)
        #expect(SourceSet.soleWriter(0b100) == 2)
        #expect(SourceSet.soleWriter(0b101) == nil)
        #expect(SourceSet.soleWriter(UInt64(1) << 63) == 63)
    }

    @Test func piecesAreWhereTheirLengthSays() throws {
        let pieces = try PieceHashes(length: 1_000, algorithm: .sha256, hashes: [hash, hash, hash])
        #expect(pieces.fits(fileLength: 3_000) && pieces.fits(fileLength: 2_001))
        #expect(!pieces.fits(fileLength: 2_000) && !pieces.fits(fileLength: 3_001) && !pieces.fits(fileLength: 0))
        #expect(pieces.range(of: 2, fileLength: 2_500) == ByteRange(start: 2_000, end: 2_499))
        #expect(pieces.pieces(from: 999, count: 2) == 0...1)
        #expect(throws: HaulError.self) { try PieceHashes(length: 0, algorithm: .sha256, hashes: [hash]) }
        #expect(throws: HaulError.self) { try PieceHashes(length: 10, algorithm: .sha1, hashes: [hash]) }
    }

    /// The primary alone wrote the bad piece: it is dropped, and only that piece comes again, from
    /// the mirror (after its probe); the good pieces stay.
    @Test func aBadPieceComesAgainFromAnotherSource() throws {
        var machine = try machine(mirrors: [mirror])
        let first = serve(&machine, machine.start(noFiles, now: 0))
        #expect(first.verifying)
        #expect(first.written[mirror.absoluteString] == nil, "one connection: the primary wrote everything")
        #expect(
            first.actions.contains { if case .request(_, let plan) = $0 { plan.range == nil } else { false } },
            "one connection asks for the whole file: only the probe's 206 proves ranges")
        let again = machine.verified(nil, badPieces: [1])
        #expect(
            again.contains(
                .notify(
                    .sourceDropped(
                        url: primary.absoluteString,
                        reason: "sent bytes 1000-1999 that fail their sha-256 piece digest"))))
        #expect(again.contains(.persist))
        #expect(machine.completedLength == 2_000)
        #expect(machine.state == .downloading)
        let second = serve(&machine, again)
        #expect(second.verifying)
        #expect(second.written[primary.absoluteString] == nil)
        #expect(second.written[mirror.absoluteString] == [ByteRange(start: 1_000, end: 1_999)])
        #expect(second.probes[mirror.absoluteString] == 1)
        #expect(machine.completedLength == total)
        #expect(machine.verified(nil) == [.publish(.part)])
    }

    /// With one source nothing is convicted: the piece is fetched again from it, and a piece that
    /// keeps failing fails the download, its bytes unclaimed so a later run fetches only them.
    @Test func aPieceThatKeepsFailingFailsTheDownload() throws {
        var machine = try machine(mirrors: [])
        #expect(serve(&machine, machine.start(noFiles, now: 0)).verifying)
        for _ in 0..<Machine.pieceRounds {
            let again = machine.verified(nil, badPieces: [2])
            #expect(!again.contains { if case .notify(.sourceDropped) = $0 { true } else { false } })
            let run = serve(&machine, again)
            #expect(run.written[primary.absoluteString] == [ByteRange(start: 2_000, end: 2_999)])
            #expect(run.verifying)
        }
        let last = machine.verified(nil, badPieces: [2])
        #expect(machine.state == .failed)
        #expect(machine.record.error?.code == .checksumMismatch)
        #expect(!last.contains { if case .publish = $0 { true } else { false } })
        #expect(!last.contains(.truncate(to: 0)), "the good pieces stay")
        #expect(machine.completedLength == 2_000)
        #expect(machine.persistentRecord.segments.map(\.start).contains(2_000))
    }

    /// Every source convicted: the download fails, nothing published.
    @Test func noSourceLeftFailsTheDownload() throws {
        var machine = try machine(mirrors: [mirror], connections: 2)
        #expect(serve(&machine, machine.start(noFiles, now: 0)).verifying)
        // Give each piece a sole writer in turn by failing every piece one source wrote.
        var round = 0
        while case .verifying = machine.state, round < 4 {
            round += 1
            _ = serve(&machine, machine.verified(nil, badPieces: [0, 1, 2]))
        }
        #expect(machine.state == .failed)
        #expect(machine.record.status == .failed)
    }

    /// A pause that came during the verification: the bad piece is unclaimed and the download
    /// stops, to fetch it when resumed.
    @Test func aPauseDuringTheCheckStopsWithThePieceUnclaimed() throws {
        var machine = try machine(mirrors: [])
        #expect(serve(&machine, machine.start(noFiles, now: 0)).verifying)
        #expect(machine.stopRequested(status: .paused).isEmpty)
        let actions = machine.verified(nil, badPieces: [0])
        #expect(actions.last == .finish(.paused))
        #expect(machine.record.status == .paused)
        #expect(machine.completedLength == 2_000)
    }
}
