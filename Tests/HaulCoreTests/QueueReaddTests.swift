import HaulCore
import Testing

/// An add of a download that exists, as the queue's actions from the ask to the batch's answer:
/// its name checked again, its place taken at an index, its save, and the answer last.
extension DownloadQueueTests {
    /// A batch of one add of `existing`, which the store knows: the actions up to its re-add.
    static func readding(_ queue: inout Queue, _ existing: DownloadRecord, _ placement: AddPlacement)
        -> [Queue.Action]
    {
        #expect(queue.addsAsked([existing.request], placements: [placement]) == [.lookUpAdds([existing.request])])
        #expect(queue.addsLookedUp([existing.request.identity: existing]) == [.readNames([:])])
        return queue.namesRead([:])
    }

    /// The batch under way is carried out (nothing new to save) and answered.
    static func answered(_ queue: inout Queue) -> [Queue.Action] {
        #expect(queue.addsCarriedOut() == [.saveNew([])])
        return queue.addsSaved()
    }

    @Test func aReaddOfOneScheduledHereOrCompleteIsAnsweredAtOnce() throws {
        var queue = Self.oneRunning()
        let running = try Self.record("a", .running)
        #expect(
            Self.readding(&queue, running, AddPlacement()) == [
                .follow(offset: 0, running.id),
                .readd(running, request: running.request, placement: AddPlacement(), offset: 0), .saveAdds,
            ])
        #expect(
            queue.readdAsked(running, request: running.request, finalFile: nil, placement: AddPlacement(), offset: 0)
                == [])
        #expect(Self.answered(&queue) == [.answerAdds([running], placedAfter: [])])
        // Waiting here with a placement: it is carried out after the batch.
        let waiting = try Self.record("b", .queued)
        _ = Self.readding(&queue, waiting, AddPlacement(index: 0))
        #expect(
            queue.readdAsked(
                waiting, request: waiting.request, finalFile: nil, placement: AddPlacement(index: 0), offset: 0) == [])
        #expect(Self.answered(&queue) == [.answerAdds([waiting], placedAfter: [0])])
        let done = try Self.record("done", .completed)
        let intact = Queue.FinalFile(path: "/d/done", size: 0)
        _ = Self.readding(&queue, done, AddPlacement(index: 0))
        #expect(
            queue.readdAsked(
                done, request: done.request, finalFile: intact, placement: AddPlacement(index: 0), offset: 0) == [
                    .publish(DownloadEvent(id: done.id, kind: .alreadyComplete(path: "/d/done"))),
                    .settle(DownloadOutcome(done, alreadyComplete: true)),
                ])
        // Complete: it has no place to take, and the move after says so.
        #expect(Self.answered(&queue) == [.answerAdds([done], placedAfter: [0])])
    }

    @Test func aReaddWhoseFileWentChecksItsNameThenTakesItsPlaceThenIsSavedAndAnswered() throws {
        var queue = Self.oneRunning()
        let done = try Self.record("done", .completed, at: 50)
        let gone = Queue.FinalFile(path: "/d/done", size: nil)
        _ = Self.readding(&queue, done, AddPlacement(index: 0))
        let actions = queue.readdAsked(
            done, request: done.request, finalFile: gone, placement: AddPlacement(index: 0), offset: 0)
        guard case .checkName(let fresh, let step) = actions.first, actions.count == 1 else {
            Issue.record("expected one name check, got \(actions)")
            return
        }
        #expect(fresh.status == .queued && fresh.position == 50 && step.save && step.index == 0 && !step.wasPaused)
        #expect(step.offset == 0)
        // Checked: it takes its place at index 0, ahead of b, before anything is saved; saved
        // after its place is taken (a slot freed meanwhile waits for it).
        let checked = queue.readdNameChecked(step)
        let placed = try #require(queue.waiting.entries.first { $0.id == done.id })
        #expect(placed.position < 2)
        var record = fresh
        record.position = placed.position
        #expect(checked.last == .saveReadd(record))
        #expect(Self.names(queue) == ["done", "b", "c"])
        #expect(Self.answered(&queue) == [.answerAdds([record], placedAfter: [])])
    }

    @Test func aPausedReaddAtItsOwnPlaceIsSavedOnlyWhenItMoved() throws {
        var queue = Self.oneRunning()
        let failed = try Self.record("f", .failed, at: 9)
        let actions = queue.readdAsked(
            failed, request: failed.request, finalFile: nil, placement: AddPlacement(startsPaused: true))
        var paused = failed
        paused.status = .paused
        #expect(
            actions == [
                .saveRecord(paused), .publish(DownloadEvent(id: paused.id, kind: .paused)),
                .settle(DownloadOutcome(paused)),
            ])
        #expect(Self.names(queue) == ["b", "c", "f*"])
        // Paused again, at its own place: nothing to save, nothing published.
        #expect(
            queue.readdAsked(
                paused, request: paused.request, finalFile: nil, placement: AddPlacement(startsPaused: true)) == [])
    }
}

extension DownloadQueueTests {
    @Test func anAddsPlacementOfOneRunningOrWaitingHerePausesFirstThenMovesAfterThePause() throws {
        var queue = Self.oneRunning()
        let running = try Self.record("a", .running)
        // Paused and placed: the run stops paused, and the move waits for that.
        #expect(
            queue.placingAfterAdd(running, AddPlacement(startsPaused: true, index: 1)) == [
                .stopRun(running.id, as: .paused), .moveAfterPause(running.id, toIndex: 1),
            ])
        // Waiting, paused: saved paused, then moved once the save is done.
        let waiting = try Self.record("c", .queued)
        #expect(
            queue.placingAfterAdd(waiting, AddPlacement(startsPaused: true, index: 0)) == [
                .savePaused([waiting.id]), .moveAfterPause(waiting.id, toIndex: 0),
            ])
        // Placed only: moved at once (`b` to the end of what waits, past the paused `c`).
        _ = queue.pausedSaved([try Self.record("c", .paused, at: 3)])
        let b = try Self.record("b", .queued, at: 2)
        #expect(
            queue.placingAfterAdd(b, AddPlacement(index: 9)) == [
                .storePlaces([Self.place("b", 4)], restore: [Self.place("b", 2)])
            ])
        #expect(Self.names(queue) == ["c*", "b"])
        // Paused only, and one already paused: nothing to move.
        #expect(queue.placingAfterAdd(try Self.record("p", .paused), AddPlacement(startsPaused: true)) == [])
    }
}
