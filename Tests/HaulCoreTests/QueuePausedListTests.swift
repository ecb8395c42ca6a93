import HaulCore
import Testing

/// The whole waiting list in the queue: the paused half kept beside the queued one, each entry
/// at its place, through pauses, runs ended paused, resumes, paused adds and re-adds and their
/// failed saves, removes and the restore; and moves decided on it, their places stored as an
/// action whose failure puts them back.
extension DownloadQueueTests {
    static func record(_ name: String, _ status: DownloadStatus, at position: Int64) throws -> DownloadRecord {
        var record = try record(name, status)
        record.position = position
        return record
    }

    /// The waiting list as names, a paused entry marked with a trailing `*`.
    static func names(_ queue: Queue) -> [String] {
        queue.waitingList.map { $0.entry.id.rawValue + ($0.paused ? "*" : "") }
    }

    @Test func aPausedWaitingDownloadKeepsItsPlaceOnceSaved() throws {
        var queue = Self.oneRunning()
        #expect(queue.pausing([(Self.id("b"), .queued)]) == [.savePaused([Self.id("b")])])
        // Out of the queued half at once; among the paused once its record says so.
        #expect(Self.names(queue) == ["c"])
        let saved = try Self.record("b", .paused, at: 2)
        #expect(
            queue.pausedSaved([saved]) == [
                .publish(DownloadEvent(id: saved.id, kind: .paused)), .settle(DownloadOutcome(saved)),
            ])
        #expect(Self.names(queue) == ["b*", "c"])
        // A slot freed now goes past it.
        let done = try Self.record("a", .completed)
        #expect(queue.runEnded(Self.id("a"), generation: 1, Self.ran(done)).contains { $0.startedID == Self.id("c") })
        #expect(Self.names(queue) == ["b*"])
    }

    @Test func aRunStoppedPausedTakesItsPlaceAmongThePausedAndAStaleEndDoesNot() throws {
        var queue = Self.oneRunning()
        #expect(queue.pausing([(Self.id("a"), .running)]) == [.stopRun(Self.id("a"), as: .paused)])
        #expect(Self.names(queue) == ["b", "c"], "not paused until its run has stopped")
        // An older start's end changes nothing.
        _ = queue.runEnded(Self.id("a"), generation: 0, Self.ran(try Self.record("a", .paused, at: 1)))
        #expect(Self.names(queue) == ["b", "c"])
        _ = queue.runEnded(Self.id("a"), generation: 1, Self.ran(try Self.record("a", .paused, at: 1)))
        // Its slot went to b; it waits paused at the head of the list, where it was.
        #expect(queue.isRunning(Self.id("b")))
        #expect(Self.names(queue) == ["a*", "c"])
    }

    @Test func theRestoreQueuesWhatWasQueuedOrRunningAndListsThePausedAtTheirPlaces() throws {
        var queue = Queue.local(limit: 1)
        let actions = queue.restored(
            [try Self.record("r", .running, at: 4), try Self.record("q", .queued, at: 2)],
            paused: [Self.place("p", 3), Self.place("o", 1)])
        #expect(actions.compactMap(\.startedID) == [Self.id("q")], "the head starts: q, not the paused o")
        #expect(Self.names(queue) == ["o*", "p*", "r"])
        // Restored twice (a second restore call): nothing is listed twice.
        _ = queue.restored([try Self.record("r", .running, at: 4)], paused: [Self.place("p", 3)])
        #expect(Self.names(queue) == ["o*", "p*", "r"])
    }

    @Test func aResumeQueuesItAtItsPlaceAndASaveThatFailsLeavesItPaused() throws {
        var queue = Queue.local(limit: 1)
        _ = queue.queued([Self.place("a", 1)])
        _ = queue.restored([], paused: [Self.place("p", 5), Self.place("q", 7)])
        _ = queue.queued([Self.place("c", 9)])
        #expect(Self.names(queue) == ["p*", "q*", "c"])
        // A resume whose record is saved first takes its place at once, listed queued once.
        var resumed = try Self.record("p", .queued, at: 5)
        resumed.error = nil
        #expect(queue.readdDecided(resumed, save: true, wasPaused: true).last == .saveReadd(resumed))
        #expect(Self.names(queue) == ["p", "q*", "c"])
        // Its save failed: its record still says paused, and so does the list.
        _ = queue.saveFailed([resumed.id])
        #expect(Self.names(queue) == ["p*", "q*", "c"])
        // Again, saved this time: queued for good.
        _ = queue.readdDecided(resumed, save: true, wasPaused: true)
        _ = queue.readdSaved(resumed.id)
        #expect(Self.names(queue) == ["p", "q*", "c"])
        #expect(queue.paused.count == 1)
        // A resume that needs no save is queued at once.
        _ = queue.readded(try Self.record("q", .queued, at: 7), wasPaused: true)
        #expect(Self.names(queue) == ["p", "q", "c"])
        #expect(queue.paused.isEmpty)
    }

    @Test func aPausedAddIsListedBeforeItsSaveAndGoneIfTheSaveFails() throws {
        var queue = Self.oneRunning()
        let kept = try Self.record("n", .paused, at: 4)
        let lost = try Self.record("m", .paused, at: 1)
        #expect(queue.addingNew(kept) == [])
        #expect(queue.addingNew(lost) == [])
        // The batch's later adds at an index count them.
        #expect(Self.names(queue) == ["m*", "b", "c", "n*"])
        _ = queue.saveFailed([lost.id])
        #expect(Self.names(queue) == ["b", "c", "n*"])
        _ = queue.newSaved([kept])
        // Saved: a later failure of another save does not take it out.
        _ = queue.saveFailed([kept.id])
        #expect(Self.names(queue) == ["b", "c", "n*"])
        // Removed: out of the list.
        var removed = kept
        removed.status = .removed
        _ = queue.removed(removed, runnerSaidSo: false, wasWaiting: false)
        #expect(Self.names(queue) == ["b", "c"])
    }

    @Test func aPausedReaddKeepsItsNewPlaceAndAFleetHostKeepsNoList() throws {
        var queue = Self.oneRunning()
        _ = queue.restored([], paused: [Self.place("p", 10)])
        #expect(Self.names(queue) == ["b", "c", "p*"])
        // Added paused again at another place: the list takes it.
        _ = queue.readded(try Self.record("p", .paused, at: 0), wasPaused: true)
        #expect(Self.names(queue) == ["p*", "b", "c"])
        var fleet = Queue.fleet(limit: 1)
        _ = fleet.restored([], paused: [Self.place("p", 10)])
        #expect(fleet.addingNew(try Self.record("n", .paused, at: 4)) == [])
        _ = fleet.pausedSaved([try Self.record("b", .paused, at: 2)])
        #expect(fleet.waitingList.isEmpty)
    }

    @Test func aMoveTakesItsPlacesAtOnceStoresThemAndAFailedWritePutsThemBack() throws {
        var queue = Self.oneRunning()
        _ = queue.restored([], paused: [Self.place("p", 10)])
        let before = queue.waitingList.map(\.entry)
        // The paused one to the top: one write, between nothing and b.
        let actions = queue.moving(try Self.record("p", .paused, at: 10), toIndex: 0)
        let moved = WaitingQueue.Entry(id: Self.id("p"), priority: 0, position: 1)
        #expect(actions == [.storePlaces([moved], restore: [before[2]])])
        #expect(Self.names(queue) == ["p*", "b", "c"])
        // The write failed: back where the store has it.
        #expect(queue.placesFailed([before[2]]) == [])
        #expect(Self.names(queue) == ["b", "c", "p*"])
        // A queued one past the paused one, to the end.
        _ = queue.moving(try Self.record("b", .queued, at: 2), toIndex: 9)
        #expect(Self.names(queue) == ["c", "p*", "b"])
        // Not waiting, or in a fleet: refused, nothing changed.
        #expect(queue.moving(try Self.record("a", .running), toIndex: 0).refusal?.code == .conflict)
        #expect(queue.moving(try Self.record("gone", .completed), toIndex: 0).refusal?.code == .conflict)
        #expect(Self.names(queue) == ["c", "p*", "b"])
        var fleet = Queue.fleet(limit: 1)
        #expect(fleet.moving(try Self.record("b", .queued), toIndex: 0).refusal?.code == .conflict)
        // Where a move one place aims.
        #expect(queue.waitingIndex(of: Self.id("p"), after: .up) == 0)
        #expect(queue.waitingIndex(of: Self.id("p"), after: .bottom) == 2)
        #expect(queue.waitingIndex(of: Self.id("a"), after: .top) == nil)
    }

    @Test func aMoveOfAnAddsUnsavedEntriesStoresOnlyTheSavedOnes() throws {
        var queue = Self.oneRunning()
        let before = queue.waitingList.map(\.entry)
        let spread = [Self.place("b", 100), Self.place("new", 200), Self.place("c", 300)]
        #expect(
            queue.placing(spread, unsaved: [Self.id("new")], before: before) == [
                .storePlaces([Self.place("b", 100), Self.place("c", 300)], restore: before)
            ])
        #expect(queue.waiting.entries.map(\.position) == [100, 300])
    }
}

extension DownloadQueue.Action {
    /// The download this action starts, if it is a start.
    var startedID: DownloadID? {
        if case .startRun(let id, _, _, _, _, _) = self { return id }
        return nil
    }
}

extension DownloadQueueTests {
    @Test func anAddsPlacementOfADownloadAFreeSlotStartedIsNoRefusalButACompleteOneIs() throws {
        var queue = Self.oneRunning()
        // `a` runs here; `r` runs for another process (its record says so): no place to take.
        #expect(queue.moving(try Self.record("a", .running), toIndex: 0, afterAdd: true) == [])
        #expect(queue.moving(try Self.record("r", .running), toIndex: 0, afterAdd: true) == [])
        #expect(queue.moving(try Self.record("a", .running), toIndex: 0).refusal?.code == .conflict)
        #expect(
            queue.moving(try Self.record("done", .completed), toIndex: 0, afterAdd: true).refusal?.code == .conflict)
    }

    @Test func aFleetsPauseOrRemoveAppliedAtOnceIsPublishedAndARemoveDeletesAsAsked() throws {
        var fleet = Queue.fleet(limit: 1)
        var request = try Self.record("x", .paused).request
        request.credentials = Credentials(user: "u", password: "p")
        Self.give(&fleet, request, to: Self.id("x"))
        let paused = try Self.record("x", .paused)
        #expect(
            fleet.fleetApplied(.pause, paused, before: .queued) == [
                .publish(DownloadEvent(id: paused.id, kind: .paused))
            ])
        #expect(fleet.given(Self.id("x")) != nil, "a pause keeps what the requests gave")
        let removed = try Self.record("x", .removed)
        #expect(
            fleet.fleetApplied(.removeWithFile, removed, before: .completed) == [
                .deleteFiles(removed, final: true), .publish(DownloadEvent(id: removed.id, kind: .removed)),
            ])
        #expect(fleet.given(Self.id("x")) == nil)
        #expect(
            fleet.fleetApplied(.removeWithFile, removed, before: .paused).first == .deleteFiles(removed, final: false))
        #expect(fleet.fleetApplied(.remove, removed, before: .completed).first == .deleteFiles(removed, final: false))
    }
}
