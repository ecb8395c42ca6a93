import HaulCore
import Testing

/// The queue's decisions as exact action lists (issue 32): a freed slot and its refusal, a pause
/// during a start, a stale run's end, adds not yet saved, what each download was given, the
/// shutdown, and a fleet host's claims, lease loss and outage. No store, no socket, no clock.
@Suite(.timeLimit(.minutes(1))) struct DownloadQueueTests {
    typealias Queue = DownloadQueue

    static func id(_ name: String) -> DownloadID { DownloadID(rawValue: name) }
    static func place(_ name: String, _ position: Int64) -> WaitingQueue.Entry {
        WaitingQueue.Entry(id: id(name), priority: 0, position: position)
    }

    static func record(_ name: String, _ status: DownloadStatus) throws -> DownloadRecord {
        let request = try DownloadRequest(url: RemoteURL("http://h/\(name)"), destination: .directory("/d"))
        var record = DownloadRecord(id: id(name), request: request, createdAt: 0)
        record.fileName = name
        record.status = status
        return record
    }

    /// An add of `request` for download `id`, which the store knows: what it gives is kept
    /// once the batch decided it (the batch then ends without a save).
    static func give(_ queue: inout Queue, _ request: DownloadRequest, to id: DownloadID) {
        var known = DownloadRecord(id: id, request: request, createdAt: 0)
        known.status = .paused
        _ = queue.addsAsked([request], placements: [AddPlacement()])
        _ = queue.addsLookedUp([request.identity: known])
        #expect(queue.namesRead([:]).contains(.readd(known, request: request, offset: 0)))
        _ = queue.addsFailed()
    }

    static func ran(_ record: DownloadRecord) -> Queue.RunEnding { .ran(record, TransferStats(), notModified: false) }

    /// Limit 1: `a` runs (generation 1), `b` and `c` wait behind it.
    static func oneRunning() -> Queue {
        var queue = Queue.local(limit: 1)
        let actions = queue.queued([place("a", 1), place("b", 2), place("c", 3)])
        #expect(
            actions == [
                .publish(DownloadEvent(id: id("a"), kind: .queued)),
                .publish(DownloadEvent(id: id("b"), kind: .queued)),
                .publish(DownloadEvent(id: id("c"), kind: .queued)),
                .startRun(id("a"), generation: 1, place: place("a", 1), given: nil),
            ])
        return queue
    }

    @Test func aRunsEndGivesItsSlotToTheHeadFirstThenSettles() throws {
        var queue = Self.oneRunning()
        let done = try Self.record("a", .completed)
        #expect(
            queue.runEnded(Self.id("a"), generation: 1, Self.ran(done)) == [
                .dropRun(Self.id("a")),
                .startRun(Self.id("b"), generation: 2, place: Self.place("b", 2), given: nil),
                .releaseName(directory: "/d", name: "a"),
                .settle(DownloadOutcome(done, transfer: TransferStats())),
            ])
        #expect(queue.state(of: Self.id("a")) == .idle)
        #expect(queue.state(of: Self.id("c")) == .waiting(Self.place("c", 3)))
    }

    @Test func aRefusedStartIsPublishedFailedAndSettledQueuedWhileItsSlotGoesOn() {
        var queue = Self.oneRunning()
        let refusal = HaulError(.inUse, "another haul process")
        #expect(
            queue.runEnded(Self.id("a"), generation: 1, .refused(refusal)) == [
                .dropRun(Self.id("a")),
                .startRun(Self.id("b"), generation: 2, place: Self.place("b", 2), given: nil),
                .publish(DownloadEvent(id: Self.id("a"), kind: .failed(refusal))),
                .settle(DownloadOutcome(id: Self.id("a"), status: .queued, error: refusal)),
            ])
        // Not scheduled here any more: a resume tries again.
        #expect(!queue.isScheduled(Self.id("a")))
    }

    @Test func aPauseDuringAStartStopsTheRunAndAStaleEndChangesNothing() throws {
        var queue = Self.oneRunning()
        // Paused while its start loads the record: the run is asked to stop, nothing else.
        #expect(queue.pausing([(Self.id("a"), .queued)]) == [.stopRun(Self.id("a"), as: .paused)])
        #expect(queue.state(of: Self.id("a")) == .running(Queue.Run(generation: 1, stop: .paused)))
        // A remove wins over the pause; a second pause asks again but changes nothing.
        #expect(queue.stop(Self.id("a"), as: .removed) == [.stopRun(Self.id("a"), as: .removed)])
        #expect(queue.stop(Self.id("a"), as: .paused) == [.stopRun(Self.id("a"), as: .paused)])
        #expect(queue.state(of: Self.id("a")) == .running(Queue.Run(generation: 1, stop: .removed)))
        // The end of an older start of the same download frees no slot and settles nothing.
        let stale = try Self.record("a", .paused)
        #expect(
            queue.runEnded(Self.id("a"), generation: 0, Self.ran(stale)) == [.releaseName(directory: "/d", name: "a")])
        #expect(queue.isRunning(Self.id("a")))
    }

    @Test func aPauseOfWaitingDownloadsTakesThemOutInOneSaveAndAFinishedOneRefusesAll() throws {
        var queue = Self.oneRunning()
        #expect(queue.pausing([(Self.id("b"), .queued), (Self.id("z"), .completed)]).refusal?.code == .conflict)
        // Refused whole: `b` still waits.
        #expect(queue.waiting.contains(Self.id("b")))
        #expect(
            queue.pausing([(Self.id("b"), .queued), (Self.id("c"), .queued), (Self.id("p"), .paused)])
                == [.savePaused([Self.id("b"), Self.id("c")])])
        #expect(queue.waiting.isEmpty)
    }

    @Test func anAddNotYetSavedHoldsTheSlotItWouldGetAndAFailedSaveLetsItGo() throws {
        var queue = Self.oneRunning()
        // Added at the head while saving: the freed slot waits for it, not for `b` behind it.
        #expect(queue.adding([Self.place("new", 0)]) == [])
        let done = try Self.record("a", .completed)
        #expect(
            !queue.runEnded(Self.id("a"), generation: 1, Self.ran(done)).contains {
                if case .startRun = $0 { true } else { false }
            })
        #expect(
            queue.saved([Self.id("new")]) == [
                .startRun(Self.id("new"), generation: 2, place: Self.place("new", 0), given: nil)
            ])

        var failing = Self.oneRunning()
        _ = failing.adding([Self.place("new", 0)])
        _ = failing.runEnded(Self.id("a"), generation: 1, Self.ran(done))
        #expect(
            failing.saveFailed([Self.id("new")]) == [
                .startRun(Self.id("b"), generation: 2, place: Self.place("b", 2), given: nil)
            ])
        #expect(failing.state(of: Self.id("new")) == .idle)
    }

    @Test func whatARequestGaveRidesWithEachStartAndGoesWithTheDownload() throws {
        var queue = Queue.local(limit: 1)
        var request = try DownloadRequest(url: RemoteURL("http://h/a"), destination: .directory("/d"))
        request.credentials = Credentials(user: "u", password: "p")
        request.timestamping = true
        Self.give(&queue, request, to: Self.id("a"))
        let given = GivenOptions(credentials: request.credentials, timestamps: GivenTimestamps(request))
        #expect(
            queue.queued([Self.place("a", 1)]).last
                == .startRun(Self.id("a"), generation: 1, place: Self.place("a", 1), given: given))
        // A re-add by id (no credentials) keeps those given before.
        request.credentials = nil
        Self.give(&queue, request, to: Self.id("a"))
        #expect(queue.given(Self.id("a")) == given)
        // Completed: nothing is kept.
        _ = queue.runEnded(Self.id("a"), generation: 1, Self.ran(try Self.record("a", .completed)))
        #expect(queue.given(Self.id("a")) == nil)
        #expect(queue.entries.isEmpty)
    }

    @Test func aRemovedWaitingDownloadIsSettledAndForgotten() throws {
        var queue = Self.oneRunning()
        var request = try DownloadRequest(url: RemoteURL("http://h/b"), destination: .directory("/d"))
        request.credentials = Credentials(user: "u", password: "p")
        Self.give(&queue, request, to: Self.id("b"))
        #expect(queue.left([Self.id("b")]) == [])
        let removed = try Self.record("b", .removed)
        #expect(
            queue.removed(removed, runnerSaidSo: false, wasWaiting: true) == [
                .publish(DownloadEvent(id: Self.id("b"), kind: .removed)), .settle(DownloadOutcome(removed)),
            ])
        #expect(queue.given(Self.id("b")) == nil)
    }

    @Test func aShutdownLeavesTheWaitingQueuedAndStopsRunsAsRunning() {
        var queue = Self.oneRunning()
        #expect(
            queue.shutdown() == [
                .settle(DownloadOutcome(id: Self.id("b"), status: .queued)),
                .settle(DownloadOutcome(id: Self.id("c"), status: .queued)),
                .stopRun(Self.id("a"), as: .running),
            ])
        #expect(queue.shutdown() == [])
        // Nothing starts after it.
        #expect(queue.queued([Self.place("d", 4)]).allSatisfy { if case .startRun = $0 { false } else { true } })
        #expect(queue.abandonedAtDeadline() == [.settle(DownloadOutcome(id: Self.id("a"), status: .running))])
    }

    @Test func aLargerLimitStartsTheNextInOrder() {
        var queue = Self.oneRunning()
        #expect(
            queue.limitChanged(3) == [
                .startRun(Self.id("b"), generation: 2, place: Self.place("b", 2), given: nil),
                .startRun(Self.id("c"), generation: 3, place: Self.place("c", 3), given: nil),
            ])
    }

    // MARK: Re-adds

    @Test func aReaddIsDecidedFromTheRecordTheRequestAndTheFileOnDisk() throws {
        var queue = Self.oneRunning()
        let completed = try Self.record("done", .completed)
        let request = completed.request
        func readd(_ record: DownloadRecord, _ file: Queue.FinalFile? = nil, paused: Bool = false) -> Queue.Readd {
            queue.readd(record, request: record.request, finalFile: file, startsPaused: paused)
        }
        // Running or waiting here: not started twice.
        #expect(readd(try Self.record("a", .running)) == .scheduled)
        #expect(readd(try Self.record("b", .queued)) == .scheduled)
        // Completed, its file intact: reported complete.
        #expect(
            readd(completed, Queue.FinalFile(path: "/d/done", size: 0)) == .alreadyComplete(completed, path: "/d/done"))
        #expect(
            queue.alreadyComplete(completed, path: "/d/done") == [
                .publish(DownloadEvent(id: completed.id, kind: .alreadyComplete(path: "/d/done"))),
                .settle(DownloadOutcome(completed, alreadyComplete: true)),
            ])
        // Completed, its file gone: a fresh record at its old place, queued, its name checked again.
        var fresh = DownloadRecord(id: completed.id, request: request, createdAt: completed.createdAt)
        fresh.position = completed.position
        fresh.status = .queued
        #expect(
            readd(completed, Queue.FinalFile(path: "/d/done", size: nil)) == .again(fresh, save: true, checkName: true))
        // Added paused, the same: saved paused, and it never joins the queue.
        fresh.status = .paused
        #expect(
            readd(completed, Queue.FinalFile(path: "/d/done", size: nil), paused: true)
                == .again(fresh, save: true, checkName: true))
        #expect(
            queue.readded(fresh, wasPaused: false) == [
                .publish(DownloadEvent(id: fresh.id, kind: .paused)), .settle(DownloadOutcome(fresh)),
            ])
        #expect(!queue.isScheduled(fresh.id))
        // Failed: queued again with its error cleared; added paused, saved paused.
        var failed = try Self.record("f", .failed)
        failed.error = HaulError(.network, "reset")
        var requeued = failed
        (requeued.status, requeued.error) = (.queued, nil)
        #expect(readd(failed) == .again(requeued, save: true, checkName: false))
        requeued.status = .paused
        #expect(readd(failed, paused: true) == .again(requeued, save: true, checkName: false))
        // Paused and added paused again: left exactly as it is, and nothing is published.
        let paused = try Self.record("p", .paused)
        #expect(readd(paused, paused: true) == .again(paused, save: false, checkName: false))
        #expect(queue.readded(paused, wasPaused: true) == [])
        // Queued in the store but not here (another process holds its lock): its record is left
        // alone, and it joins this queue.
        let elsewhere = try Self.record("q", .queued)
        #expect(readd(elsewhere) == .again(elsewhere, save: false, checkName: false))
        #expect(
            queue.readded(elsewhere, wasPaused: false) == [.publish(DownloadEvent(id: elsewhere.id, kind: .queued))])
        #expect(queue.waiting.contains(elsewhere.id))
    }

    @Test func aReaddSavedAtTheHeadHoldsTheSlotUntilItsSave() throws {
        var queue = Self.oneRunning()
        var again = try Self.record("f", .queued)
        again.position = 0
        #expect(queue.readding(again) == [])
        // The slot freed during its save waits for it.
        let done = try Self.record("a", .completed)
        #expect(
            !queue.runEnded(Self.id("a"), generation: 1, Self.ran(done)).contains {
                if case .startRun = $0 { true } else { false }
            })
        #expect(
            queue.readdSaved(again.id) == [
                .publish(DownloadEvent(id: again.id, kind: .queued)),
                .startRun(again.id, generation: 2, place: WaitingQueue.Entry(again), given: nil),
            ])
    }

    /// Where a restore, a pause, a resume, a remove and a pause of everything go is the
    /// backend's answer: this process's list, or the fleet's database.
    @Test func whereAChangeGoesIsTheBackendsAnswer() throws {
        var local = Self.oneRunning()
        var fleet = Queue.fleet(limit: 1)
        _ = fleet.claimed([Self.id("here")], limit: 1)
        // Unfinished groups are checked at every start, on either backend.
        #expect(local.restore() == [.restoreQueued, .readGroups])
        #expect(fleet.restore() == [.startClaiming(every: .seconds(1)), .readGroups])
        #expect(fleet.restore() == [.readGroups], "one loop, however often the restore is called")
        // A pause: the machine's actions here, one statement for all of them in a fleet.
        #expect(local.pausing([(Self.id("b"), .queued)]) == [.savePaused([Self.id("b")])])
        #expect(
            fleet.pausing([(Self.id("here"), .running), (Self.id("x"), .queued)])
                == [.pauseEverywhere([Self.id("here"), Self.id("x")])])
        #expect(fleet.pausing([(Self.id("x"), .queued), (Self.id("z"), .completed)]).refusal?.code == .conflict)
        // A resume: here each one not scheduled is picked up again; in a fleet those not queued
        // or running are queued in one transaction; a completed one refuses them all.
        let (paused, failed) = (try Self.record("p", .paused), try Self.record("f", .failed))
        let (waiting, running) = (try Self.record("c", .queued), try Self.record("r", .running))
        #expect(local.resuming([paused, waiting]) == [.readd(paused, request: paused.request)])
        #expect(fleet.resuming([paused, failed, running]) == [.requeue([paused, failed])])
        #expect(local.resuming([paused, try Self.record("done", .completed)]).refusal?.code == .conflict)
        // A remove: here (a run stopped first), or through the host that holds it when it does
        // not run here.
        #expect(
            local.removing(Self.id("c"), deleteFile: false) == [
                .removeHere(Self.id("c"), deleteFile: false, runnerStopped: false)
            ])
        #expect(
            fleet.removing(Self.id("here"), deleteFile: true) == [
                .stopRun(Self.id("here"), as: .removed),
                .removeHere(Self.id("here"), deleteFile: true, runnerStopped: true),
            ])
        #expect(fleet.removing(Self.id("x"), deleteFile: true) == [.removeThroughHost(Self.id("x"), .removeWithFile)])
        // A pause of everything: from memory here (`b` left the list with its pause above).
        let all = local.pausingAll()
        #expect(all == [.stopRun(Self.id("a"), as: .paused), .savePaused([Self.id("c")])])
        #expect(all.pausedCount == 2)
        #expect(fleet.pausingAll() == [.pauseAllEverywhere])
        #expect(local.holdsWaitingList && !fleet.holdsWaitingList)
        #expect(local.trustsProgressNotes && !fleet.trustsProgressNotes)
    }

    // MARK: A fleet host

    @Test func aFleetHostClaimsForItsFreeSlotsAndLooksAgainWhenTheClaimWasFull() {
        var queue = Queue.fleet(limit: 2)
        // Queued rows are the database's: a host only looks for work.
        #expect(
            queue.queued([Self.place("x", 1)]) == [
                .publish(DownloadEvent(id: Self.id("x"), kind: .queued)), .wakeClaims,
            ])
        #expect(queue.claimRequest() == .claim(limit: 2, excluding: []))
        #expect(
            queue.claimed([Self.id("x"), Self.id("y")], limit: 2) == [
                .publish(DownloadEvent(id: Self.id("x"), kind: .queued)),
                .startRun(Self.id("x"), generation: 1, place: nil, given: nil),
                .publish(DownloadEvent(id: Self.id("y"), kind: .queued)),
                .startRun(Self.id("y"), generation: 2, place: nil, given: nil),
                .wakeClaims,
            ])
        #expect(queue.claimRequest() == nil)
    }

    /// A claimed record that cannot be run (its credentials unreadable made it failed) is stored
    /// so and its lease released, never started; it still counts toward a full claim.
    @Test func aClaimedDownloadThatCannotBeRunIsStoredFailedAndReleased() throws {
        var queue = Queue.fleet(limit: 2)
        var unreadable = try Self.record("u", .queued)
        unreadable.markUnreadable("credentials", detail: "not JSON")
        #expect(unreadable.status == .failed)
        let runnable = try Self.record("r", .queued)
        #expect(
            queue.claimed([unreadable, runnable], limit: 2) == [
                .storeFailed(unreadable), .releaseLease(Self.id("u")),
                .publish(DownloadEvent(id: Self.id("r"), kind: .queued)),
                .startRun(Self.id("r"), generation: 1, place: nil, given: nil),
                .wakeClaims,
            ])
        #expect(!queue.isScheduled(Self.id("u")))
    }

    @Test func aLostLeaseStopsWithoutWritingAndAnOutageSuspendsUntilARenewalSaysItIsStillOurs() throws {
        var queue = Queue.fleet(limit: 2)
        _ = queue.claimed([Self.id("x"), Self.id("y")], limit: 3)
        // Both still hold their slots until their runs end (x's abandoned run too): no claim yet.
        #expect(
            queue.renewed(LeaseReport(lost: [Self.id("x")], commands: [Self.id("y"): .pause]), now: 1) == [
                .abandonRun(Self.id("x")), .stopRun(Self.id("y"), as: .paused),
            ])
        #expect(queue.claimRequest() == nil)
        var outage = Queue.fleet(limit: 2, leaseTimeout: .seconds(10))
        _ = outage.claimed([Self.id("y")], limit: 2)
        // The loop's first tick renews: the outage clock starts there.
        #expect(outage.tick(now: 100) == [.renewLeases])
        // A short outage changes nothing; past half the lease every run stops at a checkpoint.
        #expect(outage.renewalFailed(now: 104) == [])
        #expect(outage.renewalFailed(now: 106) == [.stopRun(Self.id("y"), as: .running)])
        // It ended running with its lease still held: suspended, its slot still taken, no release.
        let stopped = try Self.record("y", .running)
        #expect(
            outage.runEnded(Self.id("y"), generation: 1, Self.ran(stopped), holdsLease: true) == [
                .dropRun(Self.id("y")),
                .releaseName(directory: "/d", name: "y"), .settle(DownloadOutcome(stopped, transfer: TransferStats())),
                .wakeClaims,
            ])
        #expect(outage.state(of: Self.id("y")) == .suspended)
        #expect(outage.claimRequest() == .claim(limit: 1, excluding: [Self.id("y")]))
        // Suspended downloads make every tick a renewal, due or not.
        #expect(outage.tick(now: 106.1) == [.renewLeases])
        // The database is back and the lease is still this host's: it goes on here.
        #expect(
            outage.renewed(LeaseReport(), now: 107) == [
                .startRun(Self.id("y"), generation: 2, place: nil, given: nil),
                .claim(limit: 1, excluding: [Self.id("y")]),
            ])
        // The outage clock starts again from that renewal.
        #expect(outage.renewalFailed(now: 111) == [])
    }

    @Test func aFleetPauseStopsRunsHereAndLeavesOthersToTheirHosts() throws {
        var queue = Queue.fleet(limit: 2)
        _ = queue.claimed([Self.id("here")], limit: 2)
        let paused = try Self.record("free", .paused)
        let actions = queue.fleetPaused([
            Self.id("here"): .leftForHolder, Self.id("free"): .applied(paused, before: .queued),
            Self.id("again"): .applied(try Self.record("again", .paused), before: .paused),
            Self.id("other"): .leftForHolder,
        ])
        // The caller waits for the other host's only after what happens here.
        #expect(
            actions == [
                .publish(DownloadEvent(id: Self.id("free"), kind: .paused)), .stopRun(Self.id("here"), as: .paused),
                .awaitRemote(Self.id("other"), .pause),
            ])
    }

    @Test func aFleetRunThatEndsWithoutItsLeaseReleasesIt() throws {
        var queue = Queue.fleet(limit: 1)
        _ = queue.claimed([Self.id("x")], limit: 1)
        let done = try Self.record("x", .completed)
        #expect(
            queue.runEnded(Self.id("x"), generation: 1, Self.ran(done)) == [
                .dropRun(Self.id("x")), .releaseLease(Self.id("x")), .releaseName(directory: "/d", name: "x"),
                // Its groups are the database's: read before its outcome is told.
                .readGroupsOf(Self.id("x")), .settle(DownloadOutcome(done, transfer: TransferStats())), .wakeClaims,
            ])
    }
}

extension [DownloadQueue.Action] {
    /// The error of the one `.refuse` these actions are, or nil.
    var refusal: HaulError? {
        if count == 1, case .refuse(let error) = first { return error }
        return nil
    }
}
