import HaulCore
import Testing

/// An add of a download that exists, as the queue's actions from the ask to the caller's answer:
/// its name checked again, its place taken at an index, its save, and the answer last.
extension DownloadQueueTests {
    @Test func aReaddOfOneScheduledHereOrCompleteIsAnsweredAtOnce() throws {
        var queue = Self.oneRunning()
        let running = try Self.record("a", .running)
        #expect(
            queue.readdAsked(running, request: running.request, finalFile: nil, placement: AddPlacement())
                == [.answerReadd(running, placed: true)])
        // Waiting here with a placement: it is carried out after the batch.
        let waiting = try Self.record("b", .queued)
        #expect(
            queue.readdAsked(waiting, request: waiting.request, finalFile: nil, placement: AddPlacement(index: 0))
                == [.answerReadd(waiting, placed: false)])
        let done = try Self.record("done", .completed)
        let intact = Queue.FinalFile(path: "/d/done", size: 0)
        #expect(
            queue.readdAsked(done, request: done.request, finalFile: intact, placement: AddPlacement(index: 0)) == [
                .publish(DownloadEvent(id: done.id, kind: .alreadyComplete(path: "/d/done"))),
                .settle(DownloadOutcome(done, alreadyComplete: true)),
                .answerReadd(done, placed: false),
            ])
    }

    @Test func aReaddWhoseFileWentChecksItsNameThenTakesItsPlaceThenIsSavedAndAnswered() throws {
        var queue = Self.oneRunning()
        let done = try Self.record("done", .completed, at: 50)
        let gone = Queue.FinalFile(path: "/d/done", size: nil)
        let actions = queue.readdAsked(done, request: done.request, finalFile: gone, placement: AddPlacement(index: 0))
        guard case .checkName(let fresh, let step) = actions.first, actions.count == 1 else {
            Issue.record("expected one name check, got \(actions)")
            return
        }
        #expect(fresh.status == .queued && fresh.position == 50 && step.save && step.index == 0 && !step.wasPaused)
        // Checked: it takes its place at index 0 before anything is saved.
        #expect(queue.readdNameChecked(step) == [.placeReadd(step, index: 0)])
        // Placed ahead of b: saved after its place is taken (a slot freed meanwhile waits for it).
        var placed = fresh
        placed.position = 1
        let answer = queue.readdPlaced(step, as: placed)
        #expect(answer.suffix(2) == [.saveReadd(placed), .answerReadd(placed, placed: true)])
        #expect(Self.names(queue) == ["done", "b", "c"])
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
                .settle(DownloadOutcome(paused)), .answerReadd(paused, placed: true),
            ])
        #expect(Self.names(queue) == ["b", "c", "f*"])
        // Paused again, at its own place: nothing to save, nothing published.
        #expect(
            queue.readdAsked(
                paused, request: paused.request, finalFile: nil, placement: AddPlacement(startsPaused: true))
                == [.answerReadd(paused, placed: true)])
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
