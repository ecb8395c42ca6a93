import HaulCore
import Testing

/// Decisions that were the runner's and are the machine's now (issue 23): the periodic checkpoint
/// in flight, a save that fails, the end each `.finish` carries, the states that carry a stop, a
/// start-over or an expired URL, and what an event illegal in its state does.
@Suite(.timeLimit(.minutes(1))) struct MachineDecisionsTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)

    func machine(connections: Int = 1, checkpointBytes: Int64 = 32 << 20) throws -> Machine {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), connections: connections)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, checkpointInterval: 1,
                checkpointBytes: checkpointBytes, overlap: 50, tickInterval: 0.25, piecesPerConnection: 0,
                httpVersions: .http1_1))
    }

    func whole(_ length: Int64, url: String = "http://h/file") -> ResponseHead {
        ResponseHead(status: 200, headers: ["Content-Length": "\(length)", "ETag": "\"a\""], url: url)
    }

    func partial(_ start: Int64, _ end: Int64, of total: Int64) -> ResponseHead {
        ResponseHead(
            status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/\(total)", "ETag": "\"a\""],
            url: "http://h/file")
    }

    /// One connection receiving a 1000-byte file, `bytes` of it in.
    func receiving(_ bytes: Int, checkpointBytes: Int64 = 32 << 20) throws -> Machine {
        var machine = try machine(checkpointBytes: checkpointBytes)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, whole(1000), nowSecondsSince1970: 0, jitter: 0)
        if bytes > 0 { _ = machine.received(0, count: bytes) }
        return machine
    }

    // MARK: The periodic checkpoint in flight

    @Test func aCheckpointDueWhileOneRunsIsAskedForWhenItEnds() throws {
        var machine = try receiving(100, checkpointBytes: 100)
        #expect(machine.tick(now: 0.25, elapsed: 0.25) == [.backgroundCheckpoint(epoch: machine.epoch)])
        _ = machine.received(0, count: 150)
        // Due again (150 more bytes), but one runs: nothing now, and nothing forgotten.
        #expect(machine.tick(now: 0.5, elapsed: 0.25) == [])
        #expect(machine.tick(now: 0.75, elapsed: 0.25) == [])
        // The first synced its 100 bytes: they are stored, and the second is asked for at once.
        #expect(
            machine.backgroundCheckpointEnded(epoch: machine.epoch, .success([0: 100])) == [
                .persist, .backgroundCheckpoint(epoch: machine.epoch),
            ])
        #expect(machine.persistentRecord.completedLength == 100)
        #expect(machine.backgroundCheckpointEnded(epoch: machine.epoch, .success([0: 250])) == [.persist])
        #expect(machine.persistentRecord.completedLength == 250)
        // Nothing more to sync: no checkpoint however long it has been.
        #expect(machine.tick(now: 5, elapsed: 4.25) == [])
    }

    @Test func aCheckpointFromBeforeAStartOverEndsItsFlightButStoresNothing() throws {
        var machine = try receiving(100, checkpointBytes: 100)
        #expect(machine.tick(now: 0.25, elapsed: 0.25) == [.backgroundCheckpoint(epoch: machine.epoch)])
        _ = machine.received(0, count: 100)
        #expect(machine.tick(now: 0.5, elapsed: 0.25) == [])
        #expect(
            machine.backgroundCheckpointEnded(epoch: 7, .success([0: 100])) == [
                .backgroundCheckpoint(epoch: machine.epoch)
            ])
        #expect(machine.persistentRecord.completedLength == 0)
    }

    @Test func aBackgroundCheckpointThatFailsFailsTheDownload() throws {
        var machine = try receiving(100, checkpointBytes: 100)
        #expect(machine.tick(now: 0.25, elapsed: 0.25) == [.backgroundCheckpoint(epoch: machine.epoch)])
        let error = HaulError(.fileSystem, "no space left on device")
        #expect(
            machine.backgroundCheckpointEnded(epoch: machine.epoch, .failure(error))
                == [.close(0), .checkpoint(epoch: machine.epoch), .persist, .finish(.failed(error))])
        #expect(machine.state == .failed && machine.record.error == error)
    }

    // MARK: A save that fails

    @Test func aSaveThatFailsWhileRunningIsToldAndTheNextCheckpointSavesAgain() throws {
        var machine = try receiving(100)
        let error = HaulError(.store, "disk I/O error")
        #expect(machine.persistFailed(error) == [.notify(.saveFailed(error))])
        #expect(machine.state == .downloading && machine.record.status == .running)
    }

    @Test func aPauseThatIsNotStoredEndsFailed() throws {
        var machine = try receiving(100)
        #expect(machine.stopRequested(status: .paused) == [.close(0)])
        #expect(
            machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0) == [
                .checkpoint(epoch: machine.epoch), .persist, .finish(.paused),
            ])
        let actions = machine.persistFailed(HaulError(.store, "disk I/O error"))
        let error = try #require(machine.record.error)
        #expect(actions == [.finish(.failed(error))])
        #expect(machine.record.status == .failed && error.code == .store)
        #expect(
            error.message
                == """
                http://h/file: the pause could not be stored, so the download would go on at the next start: disk \
                I/O error
                """
        )
    }

    @Test func aShutdownOrACompletionWhoseSaveFailsKeepsItsEnd() throws {
        var stopped = try receiving(100)
        _ = stopped.stopRequested(status: .queued)
        #expect(stopped.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0).last == .finish(.interrupted))
        let error = HaulError(.store, "disk I/O error")
        #expect(stopped.persistFailed(error) == [.notify(.saveFailed(error))])
        #expect(stopped.record.status == .queued)

        var completed = try receiving(1000)
        _ = completed.bodyEnded(0, jitter: 0)
        _ = completed.verified(nil)
        #expect(completed.published(nil) == [.persist, .finish(.completed)])
        #expect(completed.persistFailed(error) == [.notify(.saveFailed(error))])
        #expect(completed.record.status == .completed)
    }

    // MARK: The end each finish carries

    @Test func eachStopEndsAsItsStatusSays() throws {
        for (status, end) in [
            (DownloadStatus.paused, Machine.End.paused), (.removed, .removed), (.queued, .interrupted),
            (.running, .interrupted),
        ] {
            var machine = try machine()
            _ = machine.start(noFiles, now: 0)
            #expect(machine.stopRequested(status: status) == [.close(0)])
            #expect(
                machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0) == [
                    .checkpoint(epoch: machine.epoch), .persist, .finish(end),
                ])
        }
        var lost = try receiving(10)
        #expect(lost.leaseLost() == [.close(0), .discardWrites, .finish(.interrupted)])
    }

    // MARK: States that carry their data

    @Test func aStopDuringAStartOverEndsTheRunOnceTheConnectionsClose() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 999, of: 1000), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 100)
        // The second connection's answer shows another file: everything closes, then starts over.
        let changed = ResponseHead(
            status: 206, headers: ["Content-Range": "bytes 500-999/1000", "ETag": "\"b\""], url: "http://h/file")
        #expect(machine.responseReceived(1, changed, nowSecondsSince1970: 0, jitter: 0).contains(.close(0)))
        #expect(machine.state == .restarting)
        #expect(machine.stopRequested(status: .paused) == [])
        #expect(machine.state == .stopping(.paused))
        #expect(
            machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0) == [
                .checkpoint(epoch: 1), .persist, .finish(.paused),
            ])
        #expect(machine.state == .stopped && machine.record.status == .paused)
        #expect(machine.persistentRecord.completedLength == 0, "the changed file's bytes are claimed by nothing")
    }

    /// Every byte came from the primary while a probe of the mirror was still asking: the probe
    /// is told to close and verification waits for it. A remove meanwhile ends the run once it
    /// has closed, with nothing verified (before, it asked to cancel a verification that had not
    /// begun, which then ran and published the file).
    @Test func aRemoveWhileTheLastConnectionCloseStopsBeforeAnyVerification() throws {
        let primary = try RemoteURL("http://a/file")
        let request = try DownloadRequest(
            url: primary, destination: .directory("/tmp"), connections: 2,
            mirrors: [RemoteURL("http://b/file")])
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        var machine = Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 4,
                httpVersions: .http1_1))
        func plans(_ actions: [Machine.Action]) -> [Int: RequestPlan] {
            var plans: [Int: RequestPlan] = [:]
            for action in actions { if case .request(let id, let plan) = action { plans[id] = plan } }
            return plans
        }
        func answer(_ start: Int64, _ end: Int64, from url: RemoteURL) -> ResponseHead {
            ResponseHead(
                status: 206, headers: ["Content-Range": "bytes \(start)-\(end)/10000", "ETag": "\"a\""],
                url: url.absoluteString)
        }
        _ = machine.start(noFiles, now: 0)
        var work = plans(machine.responseReceived(0, answer(0, 99, from: primary), nowSecondsSince1970: 0, jitter: 0))
        _ = machine.received(0, count: 100)
        // Connection 0 probes the mirror (and is never answered); connection 1 fetches the rest.
        #expect(plans(machine.bodyEnded(0, jitter: 0))[0]?.url.host == "b")
        var rounds = 0
        while let plan = work[1], rounds < 1000 {
            rounds += 1
            let range = try #require(plan.range)
            let end = try #require(range.end)
            _ = machine.responseReceived(1, answer(range.start, end, from: primary), nowSecondsSince1970: 0, jitter: 0)
            _ = machine.received(1, count: Int(end - range.start + 1))
            work = plans(machine.bodyEnded(1, jitter: 0))
        }
        #expect(machine.completedLength == 10_000)
        #expect(machine.state == .closingForVerify(stop: nil))
        #expect(machine.stopRequested(status: .removed) == [])
        #expect(machine.state == .closingForVerify(stop: .removed))
        #expect(
            machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0) == [
                .checkpoint(epoch: machine.epoch), .persist, .finish(.removed),
            ],
            "no .verify: nothing runs that a remove must cancel")
        #expect(machine.record.status == .removed)
    }

    /// A connection told to close whose body then fails its overlap check has stopped: that is
    /// its last report, not a changed file (before, a stop became a start-over that forgot the
    /// entity and its bytes).
    @Test func anOverlapMismatchFromAClosingConnectionIsItsLastReport() throws {
        var machine = try receiving(100)
        #expect(machine.stopRequested(status: .paused) == [.close(0)])
        #expect(machine.overlapMismatch(0) == [.checkpoint(epoch: machine.epoch), .persist, .finish(.paused)])
        #expect(machine.record.validator?.etag == "\"a\"", "the entity is kept")
        #expect(machine.record.totalLength == 1000)
    }

    /// A connection closed before its body was read reports `connectionClosed` (the runner no
    /// longer makes up a failure for it); one the machine let go has nothing to say.
    @Test func aCloseWithNothingRunningIsReportedAsSuch() throws {
        var machine = try receiving(0)
        #expect(machine.stopRequested(status: .paused) == [.close(0)])
        #expect(machine.connectionClosed(0) == [.checkpoint(epoch: machine.epoch), .persist, .finish(.paused)])
        #expect(machine.connectionClosed(0) == [])
        var receiving = try receiving(10)
        let actions = receiving.connectionClosed(0)
        #expect(
            actions.last
                == .finish(
                    .failed(HaulError(.internal, "unexpected report of a closed connection in state downloading"))))
    }

    @Test func aPauseDuringVerificationIsKeptInTheStateAndARemoveCancelsIt() throws {
        var machine = try receiving(1000)
        #expect(
            machine.bodyEnded(0, jitter: 0) == [
                .notify(.transferEnded(finishBytes: 1000)), .checkpoint(epoch: machine.epoch), .verify(.part),
            ])
        #expect(machine.state == .verifying(.part, stop: nil))
        #expect(machine.stopRequested(status: .paused) == [])
        #expect(machine.state == .verifying(.part, stop: .paused))
        #expect(machine.stopRequested(status: .removed) == [.cancelVerify])
        #expect(machine.state == .verifying(.part, stop: .removed))
    }

    // MARK: Events illegal in their state

    @Test func aVerificationResultWhileDownloadingFailsTheDownloadAsInternal() throws {
        var machine = try receiving(100)
        let error = HaulError(.internal, "unexpected verification in state downloading")
        #expect(
            machine.verified(nil) == [.close(0), .checkpoint(epoch: machine.epoch), .persist, .finish(.failed(error))])
        #expect(machine.state == .failed && machine.record.error == error)
    }

    @Test func aPublishResultWhileVerifyingFailsTheDownloadAsInternal() throws {
        var machine = try receiving(1000)
        _ = machine.bodyEnded(0, jitter: 0)
        let actions = machine.published(nil)
        let error = try #require(machine.record.error)
        #expect(actions == [.checkpoint(epoch: machine.epoch), .persist, .finish(.failed(error))])
        #expect(error.code == .internal && error.message.hasPrefix("unexpected publish in state verifying"), "\(error)")
    }

    @Test func aSecondResponseOnAReceivingConnectionFailsTheDownloadAsInternal() throws {
        var machine = try receiving(100)
        let actions = machine.responseReceived(0, whole(1000), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.last == .finish(.failed(HaulError(.internal, "unexpected response in state downloading"))))
        #expect(machine.record.status == .failed)
    }

    @Test func theEndOfABackgroundCheckpointNobodyAskedForIsUnexpected() throws {
        var machine = try receiving(100)
        let actions = machine.backgroundCheckpointEnded(epoch: machine.epoch, .success([0: 100]))
        #expect(
            actions.last
                == .finish(
                    .failed(HaulError(.internal, "unexpected end of a background checkpoint in state downloading"))))
    }

    // MARK: The file's name

    @Test func aFinalURLThatDoesNotParseNamesTheFileAfterTheRequest() throws {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"))
        var machine = Machine(
            record: DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0), settings: .init())
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(0, whole(10, url: "not a url"), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions.first == .nameFile(contentDisposition: nil, finalURL: url))
    }
}
