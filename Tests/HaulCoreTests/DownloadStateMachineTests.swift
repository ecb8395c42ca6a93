import HaulCore
import Testing

/// The machine driven by plain values: every decision about a download, without a socket.
@Suite(.timeLimit(.minutes(2))) struct DownloadStateMachineTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)

    /// Pieces are off (each request asks for the rest of its part) unless a test turns them on;
    /// HTTP/1.1 unless told: the plans the tests spell out say so (`RequestPlan`'s default).
    func machine(
        range: ByteRange? = nil, maxAttempts: Int = 3, connections: Int = 1, minimumSegment: Int64 = 100,
        record: DownloadRecord? = nil, piecesPerConnection: Int64 = 0,
        httpVersions: HTTPVersionPolicy = .http1_1
    ) throws -> Machine {
        let request = try DownloadRequest(
            url: url, destination: .directory("/tmp"), range: range, connections: connections)
        var record = record ?? DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: maxAttempts, baseDelay: .seconds(1)), minimumSegment: minimumSegment,
                minimumSteal: 10, checkpointInterval: 1, overlap: 50, maxConnectionBackoff: .seconds(60),
                tickInterval: 0.25,
                piecesPerConnection: piecesPerConnection, httpVersions: httpVersions))
    }

    func head(_ status: Int, _ headers: HTTPHeaderList) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://h/file")
    }

    func partial(_ start: Int64, _ end: Int64, of total: Int64, etag: String? = "\"a\"") -> ResponseHead {
        var headers: HTTPHeaderList = ["Content-Range": "bytes \(start)-\(end)/\(total)"]
        if let etag { headers.add(name: "ETag", value: etag) }
        return head(206, headers)
    }

    /// Feeds `count` bytes to a connection in chunks of `chunk`; returns what the machine accepted.
    @discardableResult
    /// Two connections, each answered: 0 has the first half of `total`, 1 the second.
    func splitInTwo(total: Int64) throws -> Machine {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, total - 1, of: total), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.responseReceived(1, partial(total / 2, total - 1, of: total), nowSecondsSince1970: 0, jitter: 0)
        return machine
    }

    func feed(_ machine: inout Machine, _ connection: Int, _ count: Int, chunk: Int = 10) -> [Machine.Accepted] {
        var accepted: [Machine.Accepted] = []
        var left = count
        while left > 0 {
            let size = min(chunk, left)
            let answer = machine.received(connection, count: size)
            accepted.append(answer)
            left -= size
            if answer.partComplete { break }
        }
        return accepted
    }

    func requests(_ actions: [Machine.Action]) -> [Int: RequestPlan] {
        var plans: [Int: RequestPlan] = [:]
        for action in actions { if case .request(let id, let plan) = action { plans[id] = plan } }
        return plans
    }

    // MARK: One connection

    @Test func happyPath() throws {
        var machine = try machine()
        let start = machine.start(noFiles, now: 0)
        #expect(
            start == [
                .persist, .notify(.started(offset: 0)),
                .request(0, RequestPlan(url: url, range: nil, ifRange: nil, headers: [:])),
            ])
        let actions = machine.responseReceived(
            0, head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions == [.persist, .truncate(to: 0), .receive(0)])
        let accepted = feed(&machine, 0, 100)
        #expect(accepted.map(\.writeOffset) == Array(stride(from: 0, to: 100, by: 10)))
        // The body ends where the file does: it is read to its end, so its connection is kept.
        #expect(accepted.last?.partComplete == false)
        #expect(
            machine.bodyEnded(0, jitter: 0) == [
                .notify(.transferEnded(finishBytes: 100)), .checkpoint(epoch: machine.epoch), .verify(.part),
            ])
        #expect(machine.verified(nil) == [.publish(.part)])
        #expect(machine.published(nil) == [.persist, .finish(.completed)])
        #expect(machine.record.status == .completed)
        #expect(machine.record.totalLength == 100)
        #expect(machine.record.validator?.etag == "\"a\"")
    }

    /// A fast download checkpoints by volume too, so the fsync its completion waits for is short.
    @Test func aCheckpointIsDueAfterManyBytesBeforeItsInterval() throws {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"))
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var machine = Machine(
            record: record, settings: .init(checkpointInterval: 1, checkpointBytes: 50, tickInterval: 0.25))
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 40)
        #expect(machine.tick(now: 0.25, elapsed: 0.25) == [])
        feed(&machine, 0, 20) // 60 since the start: due
        #expect(machine.tick(now: 0.5, elapsed: 0.25) == [.backgroundCheckpoint(epoch: machine.epoch)])
        #expect(machine.backgroundCheckpointEnded(epoch: machine.epoch, .success([0: 60])) == [.persist])
        feed(&machine, 0, 30) // 30 since that one: not yet
        #expect(machine.tick(now: 0.75, elapsed: 0.25) == [])
        #expect(machine.tick(now: 1.5, elapsed: 0.75) == [.backgroundCheckpoint(epoch: machine.epoch)]) // by time
    }

    @Test func onlyDurableBytesArePersisted() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 60)
        #expect(machine.completedLength == 60)
        #expect(machine.persistentRecord.completedLength == 0)
        #expect(machine.tick(now: 0.5, elapsed: 0.5) == [])
        #expect(machine.tick(now: 1.5, elapsed: 1) == [.backgroundCheckpoint(epoch: machine.epoch)])
        // The writer had 40 of the 60 bytes in the file when it synced.
        #expect(machine.backgroundCheckpointEnded(epoch: machine.epoch, .success([0: 40])) == [.persist])
        #expect(machine.persistentRecord.segments == [Segment(start: 0, end: 99, written: 40)])
        // A checkpoint from before a start-over is ignored.
        #expect(machine.synced(epoch: 7, written: [0: 60]) == [])
    }

    @Test func dropResumesWithRangeAndIfRange() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "100", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 40)
        let failed = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
        #expect(
            failed == [
                .notify(.retrying(attempt: 1, delay: .milliseconds(500), error: HaulError(.network, "reset"))),
                .schedule(.retry(0), after: .milliseconds(500)),
            ])
        #expect(
            machine.timerFired(.retry(0)) == [
                .request(0, RequestPlan(url: url, range: ByteRange(start: 40, end: 99), ifRange: "\"a\"", headers: [:]))
            ])
        // Same validator, length and URL as stored: nothing new to store before the bytes.
        #expect(
            machine.responseReceived(0, partial(40, 99, of: 100), nowSecondsSince1970: 0, jitter: 0) == [.receive(0)])
        #expect(feed(&machine, 0, 10).first?.writeOffset == 40)
    }

    @Test func progressResetsTheAttemptCount() throws {
        var machine = try machine(maxAttempts: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        for step in 1...8 {
            feed(&machine, 0, 100)
            guard
                machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0).contains(
                    .schedule(.retry(0), after: .milliseconds(500)))
            else {
                Issue.record("gave up after \(step) drops that each made progress")
                return
            }
            _ = machine.timerFired(.retry(0))
            let offset = Int64(step * 100)
            #expect(
                machine.responseReceived(
                    0, head(206, ["Content-Range": "bytes \(offset)-999/1000"]), nowSecondsSince1970: 0, jitter: 0
                )
                .contains(.receive(0)))
        }
    }

    @Test func givesUpAfterAttemptsWithoutProgress() throws {
        var machine = try machine(maxAttempts: 3)
        _ = machine.start(noFiles, now: 0)
        _ = machine.transferFailed(0, HaulError(.network, "refused"), jitter: 0)
        _ = machine.timerFired(.retry(0))
        _ = machine.transferFailed(0, HaulError(.network, "refused"), jitter: 0)
        _ = machine.timerFired(.retry(0))
        let end = machine.transferFailed(0, HaulError(.network, "refused"), jitter: 0)
        #expect(end.suffix(2) == [.persist, .finish(.failed(HaulError(.network, "refused")))])
        #expect(machine.record.status == .failed)
        #expect(machine.record.error?.code == .network)
    }

    // MARK: A changed file is never glued or cut

    /// The bug: a longer new file answered with 200 to `If-Range` was cut to the old length.
    @Test func longerEntityAfterARestartKeepsItsNewLength() throws {
        var old = try machine()
        _ = old.start(noFiles, now: 0)
        _ = old.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&old, 0, 400)
        _ = old.synced(epoch: old.epoch, written: [0: 400])
        // kill -9, the file on the server replaced by a longer one, the same command again:
        var machine = try machine(record: old.persistentRecord)
        let start = machine.start(Machine.LocalFiles(partSize: 400, published: false), now: 0)
        #expect(
            requests(start)[0]
                == RequestPlan(url: url, range: ByteRange(start: 400, end: 999), ifRange: "\"a\"", headers: [:]))
        let actions = machine.responseReceived(
            0, head(200, ["Content-Length": "2000", "ETag": "\"b\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.contains(.truncate(to: 0)))
        #expect(
            actions.contains(
                .notify(.restarted(reason: "the server sent the whole file; starting over", cause: .rangesIgnored))))
        let accepted = feed(&machine, 0, 2000, chunk: 100)
        #expect(accepted.reduce(0) { $0 + $1.keep } == 2000)
        #expect(machine.bodyEnded(0, jitter: 0).contains(.verify(.part)))
        #expect(machine.expectedLength == 2000)
        #expect(machine.record.totalLength == 2000)
    }

    /// A server that ignores ranges answers a retry with the whole file, same ETag and length.
    /// That could be a CDN that mishandles `If-Range` with an ETag: the range is asked once more
    /// without it (the 200's body unread). A second 200 means ranges are ignored: the record is
    /// stored empty before the `.part` is cut, though nothing about the entity is new.
    @Test func aWholeFileAfterStoredBytesIsStoredBeforeTheCut() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 400)
        #expect(machine.synced(epoch: machine.epoch, written: [0: 400]) == [.persist])
        _ = machine.transferFailed(0, HaulError(.network, "reset"), jitter: 0)
        _ = machine.timerFired(.retry(0))
        let again = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        // Asked again without If-Range, re-reading an overlap to prove the bytes.
        #expect(
            requests(again)[0]
                == RequestPlan(url: url, range: ByteRange(start: 350, end: 999), ifRange: nil, headers: [:]), "\(again)"
        )
        #expect(!again.contains(.truncate(to: 0)))
        let actions = machine.responseReceived(
            0, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        let persist = try #require(actions.firstIndex(of: .persist))
        let cut = try #require(actions.firstIndex(of: .truncate(to: 0)))
        #expect(persist < cut)
        #expect(machine.persistentRecord.completedLength == 0)
    }

    @Test func withoutValidatorAResumeComparesAnOverlap() throws {
        var old = try machine()
        _ = old.start(noFiles, now: 0)
        _ = old.responseReceived(0, head(200, ["Content-Length": "1000"]), nowSecondsSince1970: 0, jitter: 0)
        feed(&old, 0, 400)
        _ = old.synced(epoch: old.epoch, written: [0: 400])
        var machine = try machine(record: old.persistentRecord)
        let start = machine.start(Machine.LocalFiles(partSize: 400, published: false), now: 0)
        // 50 bytes (the overlap setting) before the resume point, no If-Range.
        #expect(
            requests(start)[0]
                == RequestPlan(url: url, range: ByteRange(start: 350, end: 999), ifRange: nil, headers: [:]))
        _ = machine.responseReceived(
            0, head(206, ["Content-Range": "bytes 350-999/1000"]), nowSecondsSince1970: 0, jitter: 0)
        let first = machine.received(0, count: 80)
        #expect(
            first
                == Machine.Accepted(
                    skip: 0, compare: 50, compareOffset: 350, keep: 30, writeOffset: 400, part: 0, partComplete: false))
        let mismatch = machine.overlapMismatch(0)
        #expect(
            mismatch.contains(
                .notify(
                    .restarted(
                        reason: "the file on the server is not the one the .part came from; starting over",
                        cause: .overlapMismatch))))
        #expect(mismatch.contains(.truncate(to: 0)))
        #expect(requests(mismatch)[1]?.range == nil)
        #expect(machine.persistentRecord.completedLength == 0)
    }

    @Test func partShorterThanItsCheckpointStartsOver() throws {
        var record = try machine().record
        record.segments = [Segment(start: 0, end: 999, written: 500)]
        record.totalLength = 1000
        var machine = try machine(record: record)
        let start = machine.start(Machine.LocalFiles(partSize: 100, published: false), now: 0)
        #expect(
            start.contains(
                .notify(
                    .restarted(
                        reason: "the .part file is shorter than its checkpoint; starting over", cause: .partShorter))))
        #expect(requests(start)[0]?.range == nil)
    }

    /// Found by `kill -9` during `-x 8`: a sparse `.part` is shorter than the start of a part
    /// that has no byte yet, and that is no reason to start over.
    @Test func aSparsePartShorterThanAnEmptyPartsStartResumes() throws {
        var record = try machine(connections: 2).record
        record.segments = [Segment(start: 0, end: 499, written: 100), Segment(start: 500, end: 999, written: 0)]
        record.totalLength = 1000
        record.validator = EntityValidator(etag: "\"a\"")
        var machine = try machine(connections: 2, record: record)
        let start = machine.start(Machine.LocalFiles(partSize: 100, published: false), now: 0)
        #expect(!start.contains { if case .notify(.restarted) = $0 { true } else { false } })
        #expect(requests(start)[0]?.range == ByteRange(start: 100, end: 499))
    }

    @Test func aPublishACrashInterruptedIsVerifiedWhereItIs() throws {
        var record = try machine().record
        record.segments = [Segment(start: 0, end: 999, written: 1000)]
        record.totalLength = 1000
        var machine = try machine(record: record)
        #expect(machine.start(Machine.LocalFiles(partSize: nil, published: true), now: 0).last == .verify(.published))
        #expect(machine.verified(nil) == [.publish(.published)])
    }

    // MARK: Several connections

    @Test func theFirstRangeAnswerOpensTheOtherConnections() throws {
        var machine = try machine(connections: 4)
        let start = machine.start(noFiles, now: 0)
        // With several connections the first request asks for a range: only a 206 proves support.
        #expect(requests(start)[0]?.range == ByteRange(start: 0))
        let actions = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        let plans = requests(actions)
        #expect(
            plans.mapValues(\.range) == [
                1: ByteRange(start: 250, end: 499), 2: ByteRange(start: 500, end: 749),
                3: ByteRange(start: 750, end: 999),
            ])
        #expect(plans.values.allSatisfy { $0.ifRange == "\"a\"" })
        #expect(actions.contains(.receive(0)))
        #expect(machine.owners == [0: 0, 250: 1, 500: 2, 750: 3])
        // The first connection's body runs on past its new end: the machine stops it there.
        let accepted = feed(&machine, 0, 400, chunk: 100)
        #expect(accepted.map(\.keep) == [100, 100, 50])
        #expect(accepted.last?.partComplete == true)
    }

    @Test func aFileTooSmallToSplitUsesFewerConnections() throws {
        var machine = try machine(connections: 8, minimumSegment: 400)
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        #expect(requests(actions).count == 1) // 1000 bytes, 400 at least each: two parts
        #expect(machine.activeConnections == 2)
    }

    @Test func aServerThatIgnoresRangesGetsOneConnection() throws {
        var machine = try machine(connections: 4)
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(
            0, head(200, ["Content-Length": "1000"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(requests(actions).isEmpty)
        #expect(feed(&machine, 0, 1000, chunk: 100).reduce(0) { $0 + $1.keep } == 1000)
    }

    @Test func anIdleConnectionStealsHalfOfTheLargestPart() throws {
        var machine = try splitInTwo(total: 1000)
        feed(&machine, 0, 500, chunk: 100) // connection 0 is done with 0-499
        feed(&machine, 1, 100, chunk: 100) // connection 1 is at 600
        let actions = machine.bodyEnded(0, jitter: 0)
        // Speeds unknown: half of the 400 left each.
        #expect(requests(actions)[0]?.range == ByteRange(start: 800, end: 999))
        // The split waits for the next checkpoint's store write, which holds both parts.
        #expect(!actions.contains(.persist))
        #expect(machine.persistentRecord.segments.map(\.start) == [0, 500, 800])
        let rest = feed(&machine, 1, 400, chunk: 100)
        #expect(rest.map(\.keep) == [100, 100])
        #expect(rest.last?.partComplete == true)
    }

    @Test func aSlowConnectionIsLeftOnlyWhatItCanFinishInTime() throws {
        var machine = try splitInTwo(total: 10000)
        feed(&machine, 0, 4000, chunk: 100)
        feed(&machine, 1, 100, chunk: 100)
        _ = machine.tick(now: 1, elapsed: 1) // 0 runs at 4000 B/s, 1 at 100 B/s
        feed(&machine, 0, 1000, chunk: 100)
        let actions = machine.bodyEnded(0, jitter: 0)
        // 4900 left at 5100-9999: the fast one takes 40/41 of it.
        #expect(requests(actions)[0]?.range == ByteRange(start: 5219, end: 9999))
    }

    /// A part its owner finishes within half a second is not worth a new request.
    @Test func aPartAboutToFinishIsNotStolen() throws {
        var machine = try splitInTwo(total: 10000)
        feed(&machine, 0, 4000, chunk: 100)
        feed(&machine, 1, 4000, chunk: 100)
        _ = machine.tick(now: 1, elapsed: 1) // both at 4000 B/s; connection 1 has 1000 left: 0.25 s
        feed(&machine, 0, 1000, chunk: 100)
        let actions = machine.bodyEnded(0, jitter: 0)
        #expect(requests(actions).isEmpty)
        #expect(machine.activeConnections == 1)
    }

    /// Found by a hang: stealing everything from a part that had no byte yet made two parts with
    /// one start, and the download waited for ever.
    @Test func aPartWithNoByteYetIsNeverCutAtItsStart() throws {
        var machine = try splitInTwo(total: 10000)
        feed(&machine, 0, 5000, chunk: 1000)
        _ = machine.tick(now: 1, elapsed: 1) // 0 runs at 5000 B/s, 1 has received nothing
        let actions = machine.bodyEnded(0, jitter: 0)
        let starts = machine.persistentRecord.segments.map(\.start)
        #expect(Set(starts).count == starts.count, "\(machine.persistentRecord.segments)")
        if let plan = requests(actions)[0] { #expect(plan.range!.start > 5000) }
    }

    /// Found in nginx's log at -x 8: a thief's fresh part had no measured speed, so the next idle
    /// connection stole half of it, and the next half of that, a request each. A connection's
    /// speed goes with it to the part it takes, and a part that will be done within half a second
    /// is left alone.
    @Test func aFreshlyStolenPartIsNotStolenAgain() throws {
        var machine = try machine(connections: 3)
        _ = machine.start(noFiles, now: 0)
        let opened = machine.responseReceived(0, partial(0, 2999, of: 3000), nowSecondsSince1970: 0, jitter: 0)
        #expect(
            requests(opened).mapValues(\.range) == [
                1: ByteRange(start: 1000, end: 1999), 2: ByteRange(start: 2000, end: 2999),
            ])
        _ = machine.responseReceived(1, partial(1000, 1999, of: 3000), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.responseReceived(2, partial(2000, 2999, of: 3000), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 1000, chunk: 100)
        feed(&machine, 1, 300, chunk: 100)
        feed(&machine, 2, 100, chunk: 100)
        _ = machine.tick(now: 0.5, elapsed: 0.5) // 2000, 600 and 200 bytes/s
        let stolen = requests(machine.bodyEnded(0, jitter: 0))[0]?.range
        #expect(stolen == ByteRange(start: 2181, end: 2999)) // 0.41 s of work at 2000 bytes/s
        feed(&machine, 1, 700, chunk: 100)
        // Connection 1 is done; the rest of every part is under half a second away.
        #expect(requests(machine.bodyEnded(1, jitter: 0)).isEmpty)
    }

    @Test func aRefusedExtraConnectionIsNotAnError() throws {
        var machine = try machine(connections: 3)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 899, of: 900), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.responseReceived(1, partial(300, 599, of: 900), nowSecondsSince1970: 0, jitter: 0)
        let refused = machine.responseReceived(2, head(503, ["Retry-After": "5"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(refused.contains(.close(2)))
        #expect(refused.contains(.schedule(.moreConnections, after: .seconds(5))))
        #expect(requests(refused).isEmpty)
        #expect(machine.record.status == .running)
        // The refused part waits for whoever finishes first.
        feed(&machine, 1, 300, chunk: 100)
        #expect(requests(machine.bodyEnded(1, jitter: 0))[1]?.range == ByteRange(start: 600, end: 899))
        // After Retry-After, one more try; refused again, the wait doubles instead of hammering.
        _ = machine.timerFired(.moreConnections)
        let again = machine.responseReceived(3, head(503, [:]), nowSecondsSince1970: 0, jitter: 0)
        guard
            let delay = again.compactMap({ if case .schedule(.moreConnections, let after) = $0 { after } else { nil } })
                .first
        else {
            Issue.record("no later try scheduled: \(again)")
            return
        }
        #expect(delay == .seconds(4))
    }

    @Test func aWholeAnswerOnAnExtraConnectionIsNeverWritten() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        let actions = machine.responseReceived(
            1, head(200, ["Content-Length": "1000", "ETag": "\"a\""]), nowSecondsSince1970: 0, jitter: 0)
        #expect(!actions.contains(.receive(1)))
        #expect(
            machine.received(1, count: 100)
                == Machine.Accepted(
                    skip: 0, compare: 0, compareOffset: 0, keep: 0, writeOffset: 0, part: 0, partComplete: true))
    }

    @Test func aValidatorThatDiffersBetweenConnectionsStartsOver() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 100)
        let changed = machine.responseReceived(
            1, partial(500, 999, of: 1000, etag: "\"b\""), nowSecondsSince1970: 0, jitter: 0)
        #expect(changed.contains(.close(0)))
        #expect(!changed.contains(.truncate(to: 0))) // not while connection 0 may still write
        #expect(machine.persistentRecord.totalLength == nil)
        let restart = machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
        #expect(restart.prefix(2) == [.persist, .truncate(to: 0)])
        #expect(requests(restart)[2]?.range == ByteRange(start: 0))
    }

    // MARK: Stopping

    @Test func aStopClosesEveryConnectionThenCheckpoints() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 100)
        #expect(machine.stopRequested(status: .paused) == [.close(0), .close(1)])
        #expect(machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0) == [])
        #expect(
            machine.transferFailed(1, HaulError(.interrupted, "closed"), jitter: 0) == [
                .checkpoint(epoch: 0), .persist, .finish(.paused),
            ])
        #expect(machine.record.status == .paused)
    }

    @Test func aPauseWaitsForVerificationButARemoveInterruptsIt() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, head(200, ["Content-Length": "100"]), nowSecondsSince1970: 0, jitter: 0)
        feed(&machine, 0, 100)
        _ = machine.bodyEnded(0, jitter: 0)
        #expect(machine.stopRequested(status: .paused) == [])
        #expect(machine.stopRequested(status: .removed) == [.cancelVerify])
        #expect(
            machine.verified(HaulError(.interrupted, "stopped")) == [
                .checkpoint(epoch: machine.epoch), .persist, .finish(.removed),
            ])
        #expect(machine.record.status == .removed)
    }
}
