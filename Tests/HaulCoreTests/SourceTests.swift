import HaulCore
import Testing

/// A download with several sources (mirrors): connections spread over them, a source proves
/// with a probe that it serves the same bytes before it writes any, and a source that lies or
/// dies is dropped while the others finish, all with plain values.
@Suite(.timeLimit(.minutes(1))) struct SourceTests {
    typealias Machine = DownloadStateMachine
    let primary = try! RemoteURL("http://a/file")
    let mirror = try! RemoteURL("http://b/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)
    let total: Int64 = 10_000

    func machine(connections: Int = 2, mirrors: [RemoteURL]? = nil) throws -> Machine {
        let request = try DownloadRequest(
            url: primary, destination: .directory("/tmp"), connections: connections,
            mirrors: mirrors ?? [mirror])
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 4,
                httpVersions: .http1_1))
    }

    func partial(_ start: Int64, _ end: Int64, of total: Int64? = nil, etag: String = "\"a\"", url: RemoteURL? = nil)
        -> ResponseHead
    {
        ResponseHead(
            status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/\(total ?? self.total)", "ETag": etag],
            url: (url ?? primary).absoluteString)
    }

    func requests(_ actions: [Machine.Action]) -> [Int: RequestPlan] {
        var plans: [Int: RequestPlan] = [:]
        for action in actions { if case .request(let id, let plan) = action { plans[id] = plan } }
        return plans
    }

    func dropped(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { if case .notify(.sourceDropped(let url, _)) = $0 { url } else { nil } }
    }

    /// Starts a two-connection download whose first piece (100 bytes from the primary) is in,
    /// and returns the machine with the request the first connection makes next.
    func firstPieceIn() throws -> (Machine, [Int: RequestPlan]) {
        var machine = try machine()
        let first = requests(machine.start(noFiles, now: 0))
        #expect(first[0]?.url == primary)
        let opened = requests(machine.responseReceived(0, partial(0, 99), nowSecondsSince1970: 0, jitter: 0))
        // Nothing is written yet to compare a mirror with: the extra connection asks the primary.
        #expect(opened.values.allSatisfy { $0.url == primary }, "\(opened)")
        #expect(machine.received(0, count: 100).keep == 100)
        let next = requests(machine.bodyEnded(0, jitter: 0))
        return (machine, next)
    }

    // MARK: The rules

    @Test func aNewConnectionGoesToTheLeastLoadedUsableSource() {
        var set = SourceSet([primary, mirror, try! RemoteURL("http://c/file")])
        set.prove(0)
        #expect(set.pick(now: 0, canProbe: true, load: [2, 0, 0]) == 1)
        // Untried sources cost a probe: without bytes to compare with, only proven ones.
        #expect(set.pick(now: 0, canProbe: false, load: [2, 0, 0]) == 0)
        set.setAside(1, until: 5)
        #expect(set.pick(now: 1, canProbe: true, load: [2, 0, 0]) == 2)
        set.drop(2, reason: "404")
        #expect(set.pick(now: 1, canProbe: true, load: [2, 0, 0]) == 0)
        #expect(set.pick(now: 5, canProbe: true, load: [2, 0, 0]) == 1)
        // At equal load, a proven source before an untried one.
        set.prove(1)
        var fresh = SourceSet([primary, mirror])
        fresh.prove(1)
        #expect(fresh.pick(now: 0, canProbe: true, load: [0, 0]) == 1)
    }

    /// A source whose connections bring less than a quarter of what another source's bring is
    /// picked only when no other can be; one not measured over two ticks, or with nothing
    /// measured to compare it with, is not slow; and a measure lasts `speedLifetime` (10 s)
    /// without a new one, so a source left as slow is tried again.
    @Test func aMuchSlowerSourceIsPickedLast() {
        var set = SourceSet([primary, mirror, try! RemoteURL("http://c/file")])
        set.prove(0)
        set.prove(1)
        set.noteSpeed(1, perConnection: 100, now: 0.25)
        set.noteSpeed(1, perConnection: 100, now: 0.5)
        #expect(!set.isSlow(1, ratio: 4, now: 0.5), "nothing to compare with")
        set.noteSpeed(0, perConnection: 4000, now: 0.25)
        #expect(!set.isSlow(1, ratio: 4, now: 0.5), "the primary is measured over one tick only")
        set.noteSpeed(0, perConnection: 4000, now: 0.5)
        #expect(set.isSlow(1, ratio: 4, now: 0.5))
        #expect(!set.isSlow(0, ratio: 4, now: 0.5))
        // Fewest connections first, but not the slow one while another can be used.
        #expect(set.pick(now: 1, canProbe: true, load: [3, 0, 2]) == 1)
        #expect(set.pick(now: 1, canProbe: true, load: [3, 0, 2], slowRatio: 4) == 2)
        set.drop(2, reason: "404")
        #expect(set.pick(now: 1, canProbe: true, load: [3, 0, 0], slowRatio: 4) == 0)
        set.setAside(0, until: 5)
        #expect(
            set.pick(now: 1, canProbe: true, load: [3, 0, 0], slowRatio: 4) == 1,
            "the slow one, when it is all there is")
        // Ten seconds without a measure of the slow one: it is tried again, and measured anew.
        set.noteSpeed(0, perConnection: 4000, now: 10.5)
        #expect(set.isSlow(1, ratio: 4, now: 10.5))
        #expect(!set.isSlow(1, ratio: 4, now: 10.75))
        #expect(set.pick(now: 10.75, canProbe: true, load: [3, 0, 0], slowRatio: 4) == 1)
        set.noteSpeed(1, perConnection: 3000, now: 11)
        #expect(set.sources[1].speedSamples == 1 && set.sources[1].connectionSpeed == 3000)
        // A third as fast is not slow at a ratio of 4.
        var close = SourceSet([primary, mirror])
        for tick in 1...2 {
            close.noteSpeed(0, perConnection: 3000, now: Double(tick))
            close.noteSpeed(1, perConnection: 1000, now: Double(tick))
        }
        #expect(!close.isSlow(1, ratio: 4, now: 2))
    }

    @Test func deadAndBusySourcesAreToldApart() {
        #expect(SourceSet.isDead(HaulError(.httpStatus, "404", httpStatus: 404)))
        #expect(SourceSet.isDead(HaulError(.httpStatus, "410", httpStatus: 410)))
        #expect(SourceSet.isDead(HaulError(.httpStatus, "403", httpStatus: 403)))
        #expect(!SourceSet.isDead(HaulError(.httpStatus, "503", httpStatus: 503)))
        #expect(!SourceSet.isDead(HaulError(.httpStatus, "429", httpStatus: 429)))
        #expect(!SourceSet.isDead(HaulError(.network, "connection refused")))
    }

    @Test func mirrorsAreCheckedAndNotRepeated() throws {
        let request = try DownloadRequest(
            url: primary, destination: .directory("/tmp"), mirrors: [mirror, primary, mirror])
        #expect(request.sources == [primary, mirror])
        let many = try (0..<64).map { try RemoteURL("http://m\($0)/file") }
        #expect(throws: HaulError.self) {
            try DownloadRequest(url: primary, destination: .directory("/tmp"), mirrors: many)
        }
    }

    // MARK: Probes

    /// A mirror proves itself on bytes already written before it writes any: its first request
    /// asks for the last `overlap` bytes the primary wrote, compared and not written; then it
    /// takes pieces like any connection.
    @Test func aMirrorProbesBeforeItWrites() throws {
        var (machine, next) = try firstPieceIn()
        // Two connections on the primary, none on the mirror: the one that finished a piece moves.
        let probe = try #require(next[0])
        #expect(probe.url == mirror)
        #expect(probe.range == ByteRange(start: 50, end: 99))
        #expect(probe.ifRange == nil)
        _ = machine.responseReceived(0, partial(50, 99, etag: "\"b\"", url: mirror), nowSecondsSince1970: 0, jitter: 0)
        let accepted = machine.received(0, count: 50)
        #expect(accepted.compare == 50 && accepted.compareOffset == 50 && accepted.keep == 0, "\(accepted)")
        let work = requests(machine.bodyEnded(0, jitter: 0))
        #expect(machine.sources[1].standing == .proven)
        let piece = try #require(work[0])
        #expect(piece.url == mirror)
        #expect(piece.range?.start == 100)
        // Its own validator, never the primary's.
        _ = machine.responseReceived(
            0, partial(100, piece.range!.end!, etag: "\"b\"", url: mirror), nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.validator?.etag == "\"a\"")
    }

    /// A probe holds no part (its part would look unrequested and be stolen away); a connection
    /// whose probe failed asks only for a part nobody else owns (two writers on one part gave a
    /// wrong file under load).
    @Test func aProbeHoldsNoPart() throws {
        var (machine, next) = try firstPieceIn()
        #expect(next[0]?.url == mirror)
        #expect(machine.owners[0] == nil, "\(machine.owners)")
        // The other connection finishes its part's piece and, its part done, takes the free one.
        _ = machine.responseReceived(0, partial(50, 99, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 50)
        let back = machine.overlapMismatch(0)
        // Sent back to the primary, it takes its old part again, from where it stood.
        #expect(requests(back)[0]?.url == primary && requests(back)[0]?.range?.start == 100, "\(back)")
        #expect(machine.owners[0] == 0)
        #expect(Set(machine.owners.values).count == machine.owners.count, "one owner per part: \(machine.owners)")
    }

    /// A mirror 40x slower than the primary: once both are measured over two ticks, its
    /// connection is closed and its part goes on from the primary on a new connection; the next
    /// piece does not move back to it, though it has fewer connections.
    @Test func aMuchSlowerMirrorIsLeft() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        let second = try #require(
            requests(machine.responseReceived(0, partial(0, 99), nowSecondsSince1970: 0, jitter: 0))[1])
        #expect(second.url == primary)
        _ = machine.received(0, count: 100)
        let probe = try #require(requests(machine.bodyEnded(0, jitter: 0))[0])
        #expect(probe.url == mirror)
        _ = machine.responseReceived(
            0, partial(probe.range!.start, probe.range!.end!, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: Int(probe.range!.count!))
        let piece = try #require(requests(machine.bodyEnded(0, jitter: 0))[0])
        #expect(piece.url == mirror && piece.range?.start == 100, "\(piece)")
        _ = machine.responseReceived(0, partial(100, piece.range!.end!, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.responseReceived(
            1, partial(second.range!.start, second.range!.end!), nowSecondsSince1970: 0, jitter: 0)

        // The primary's connection brings 300 bytes a second, the mirror's 5. The first tick
        // only sees the bodies begin; two more measure them.
        var actions: [Machine.Action] = []
        for tick in 1...3 {
            #expect(machine.received(1, count: 300).keep == 300)
            #expect(machine.received(0, count: 5).keep == 5)
            actions = machine.tick(now: Double(tick), elapsed: 1)
            if tick < 3 { #expect(!actions.contains(.close(0)), "tick \(tick) is not a measure yet") }
        }
        #expect(machine.sources.isSlow(1, ratio: 4, now: 3))
        #expect(actions.contains(.close(0)), "\(actions)")
        let moved = requests(actions)
        #expect(moved.count == 1, "\(actions)")
        let plan = try #require(moved.values.first)
        #expect(plan.url == primary)
        let range = try #require(plan.range)
        #expect(range.start <= 115 && (range.end ?? 0) >= 115, "the part goes on where the mirror left it: \(range)")
        #expect(machine.owners[0] != 0 && machine.owners[0] != nil, "\(machine.owners)")

        // The primary's connection finishes its piece: it stays there.
        let rest = Int(second.range!.count!) - 900
        #expect(machine.received(1, count: rest).keep == rest)
        let next = requests(machine.bodyEnded(1, jitter: 0))
        #expect(next[1]?.url == primary, "\(next)")
    }

    /// With mirrors, the first request asks for 64 KiB, not `minimumSegment` (1 MiB): every
    /// connection starts on the first URL, and the first one moves to a mirror at that piece's
    /// end, so a slow first URL holds it for 64 KiB only. With one URL nothing changes.
    @Test func theFirstPieceIsShortWithMirrors() throws {
        for mirrors in [[mirror], []] {
            let request = try DownloadRequest(
                url: primary, destination: .directory("/tmp"), connections: 4, mirrors: mirrors)
            var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
            record.fileName = "file"
            var machine = Machine(record: record, settings: .init(httpVersions: .http1_1))
            let first = try #require(requests(machine.start(noFiles, now: 0))[0])
            #expect(first.range == ByteRange(start: 0, end: (mirrors.isEmpty ? 1 << 20 : 64 << 10) - 1), "\(mirrors)")
        }
    }

    /// A mirror whose bytes differ never writes one: it is dropped, and its connection goes back
    /// to the primary.
    @Test func aMirrorWithOtherBytesIsDropped() throws {
        var (machine, next) = try firstPieceIn()
        #expect(next[0]?.url == mirror)
        _ = machine.responseReceived(0, partial(50, 99, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 50)
        let after = machine.overlapMismatch(0)
        #expect(dropped(after) == [mirror.absoluteString])
        #expect(machine.sources[1].isDropped)
        #expect(requests(after)[0]?.url == primary, "\(after)")
        #expect(machine.state == .downloading)
    }

    /// A mirror of another length is dropped at its probe's head, before any byte.
    @Test func aMirrorOfAnotherLengthIsDropped() throws {
        var (machine, _) = try firstPieceIn()
        let after = machine.responseReceived(
            0, partial(50, 99, of: total + 1, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        #expect(dropped(after) == [mirror.absoluteString])
        #expect(requests(after)[0]?.url == primary)
    }

    /// A dead mirror (404) is dropped and costs no try; a busy one (503) is set aside.
    @Test(arguments: [(404, true), (503, false)])
    func aFailingMirrorCostsNoTry(status: Int, dead: Bool) throws {
        var (machine, _) = try firstPieceIn()
        let head = ResponseHead(status: status, headers: [:], url: mirror.absoluteString)
        let after = machine.responseReceived(0, head, nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.sources[1].isDropped == dead)
        #expect(requests(after)[0]?.url == primary, "\(after)")
        #expect(!after.contains { if case .notify(.retrying) = $0 { true } else { false } }, "\(after)")
    }

    /// A dead primary: the first connection moves to the mirror at once, which becomes the
    /// reference (nothing is on disk to compare it with).
    @Test func aDeadPrimaryLeavesTheFileToTheMirror() throws {
        var machine = try machine(connections: 1)
        _ = machine.start(noFiles, now: 0)
        let after = machine.transferFailed(0, HaulError(.network, "connection refused"), jitter: 0)
        let next = try #require(requests(after)[0])
        #expect(next.url == mirror && next.range == nil, "\(after)")
        _ = machine.responseReceived(
            0, ResponseHead(status: 200, headers: ["Content-Length": "\(total)"], url: mirror.absoluteString),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.received(0, count: Int(total)).keep == Int(total))
        _ = machine.bodyEnded(0, jitter: 0)
        #expect(machine.state == .verifying(.part, stop: nil))
    }

    /// No consistent source left: the primary turns out to serve another file (dropped, its
    /// connection sent to the mirror) and the mirror's bytes differ from those on disk: the
    /// download fails naming both, and no byte of either lie was written.
    @Test func noConsistentSourceFailsTheDownload() throws {
        var (machine, _) = try firstPieceIn()
        let changed = machine.responseReceived(1, partial(5050, 6299, of: total + 1), nowSecondsSince1970: 0, jitter: 0)
        #expect(dropped(changed) == [primary.absoluteString], "\(changed)")
        #expect(requests(changed)[1]?.url == mirror)
        _ = machine.responseReceived(0, partial(50, 99, url: mirror), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 50)
        let end = machine.overlapMismatch(0)
        #expect(machine.state == .failed)
        let error = try #require(machine.record.error)
        #expect(error.message.hasPrefix("no source serves one consistent file: "), "\(error)")
        #expect(error.message.contains("http://a/file") && error.message.contains("http://b/file"), "\(error)")
        #expect(end.contains { if case .finish = $0 { true } else { false } })
        #expect(machine.persistentRecord.completedLength <= 100)
    }
}
