import HaulCore
import Testing

/// A caller's forget, connection change and new URLs, decided by the queue as actions: a
/// refusal is an action, and the store's writes are actions whose failure is the caller's.
extension DownloadQueueTests {
    @Test func aFinishedDownloadIsForgottenOnceItsRunReturnedAndAnyOtherIsAConflict() throws {
        let queue = Self.oneRunning()
        let done = try Self.record("done", .completed)
        #expect(queue.forgetting(done) == [.deleteRecords([done.id])])
        #expect(queue.forgetting(try Self.record("b", .queued)).refusal?.code == .conflict)
        #expect(queue.forgetting(try Self.record("p", .paused)).refusal?.code == .conflict)
        // `a` stored its end but its run has not returned yet: waited for, then forgotten.
        #expect(
            queue.forgetting(try Self.record("a", .completed)) == [
                .awaitRun(Self.id("a")), .forgetAfterRun(Self.id("a")),
            ])
        #expect(queue.forgetting(try Self.record("a", .running)).refusal?.code == .conflict)
        // Forgetting every finished one leaves out the one a run here still holds.
        let all = queue.forgettingFinished([Self.id("a"), done.id, Self.id("gone")])
        #expect(all == [.deleteRecords([done.id, Self.id("gone")])])
        #expect(all.deletedCount == 2)
    }

    @Test func connectionsChangeForAWaitingDownloadAsAFixedCountAndNotForARunningOne() throws {
        let queue = Self.oneRunning()
        var waiting = try Self.record("b", .queued)
        waiting.request.growsConnections = true
        var changed = waiting
        changed.request.connections = 6
        changed.request.growsConnections = false
        #expect(queue.changingConnections(waiting, to: 6) == [.saveRecord(changed)])
        #expect(queue.changingConnections(try Self.record("a", .running), to: 6).refusal?.code == .conflict)
    }

    @Test func newURLsStopARunFirstKeepAPausedOnePausedAndQueueAnyOtherAgain() throws {
        var queue = Self.oneRunning()
        // A completed download keeps its URLs; a running one stops at a checkpoint, as queued.
        #expect(queue.changingSources(of: try Self.record("done", .completed)).refusal?.code == .conflict)
        #expect(queue.changingSources(of: try Self.record("a", .running)) == [.stopRun(Self.id("a"), as: .queued)])
        #expect(queue.changingSources(of: try Self.record("b", .queued)) == [])
        // The new first URL drops what the old server's validator said.
        var waiting = try Self.record("b", .queued)
        waiting.validator = EntityValidator(etag: "\"old\"")
        var request = waiting.request
        try request.replaceSources(url: RemoteURL("http://other/b"), mirrors: [])
        var renewed = waiting
        renewed.request = request
        renewed.validator = nil
        #expect(Queue.withNewSources(waiting, request: request) == renewed)
        #expect(queue.sourcesChanged(renewed) == [.saveRecord(renewed)])
        var completed = renewed
        completed.status = .completed
        #expect(queue.sourcesChanged(completed).refusal?.code == .conflict)
        // Saved: a queued one leaves the list and is picked up again; a paused one stays.
        #expect(queue.sourcesSaved(renewed) == [.readd(renewed, request: renewed.request)])
        #expect(!queue.waiting.contains(Self.id("b")))
        var paused = renewed
        paused.status = .paused
        #expect(queue.sourcesSaved(paused) == [])
        // In a fleet, not yet.
        var fleet = Queue.fleet(limit: 1)
        #expect(fleet.changingSources(of: waiting).refusal?.code == .conflict)
    }
}

/// A remove carried out here and a rate change, decided by the queue as actions.
extension DownloadQueueTests {
    @Test func aRemoveHereStopsARunStartedAgainThenDeletesReleasesSavesAndSettles() throws {
        var queue = Self.oneRunning()
        // `a` runs (started again after its first run stopped): stopped first, for the caller to wait.
        let running = try Self.record("a", .running)
        #expect(
            queue.removingNow(running, deleteFile: true, runnerStopped: true, stoppedAgain: false) == [
                .stopRun(Self.id("a"), as: .removed)
            ])
        // `b` waits: out of the list first; only a completed file is deleted with its `.part`.
        let waiting = try Self.record("b", .queued)
        var removed = waiting
        removed.status = .removed
        #expect(
            queue.removingNow(waiting, deleteFile: true, runnerStopped: false, stoppedAgain: false) == [
                .deleteFiles(waiting, final: false),
                .releaseName(directory: "/d", name: "b"),
                .saveRecord(removed),
                .publish(DownloadEvent(id: removed.id, kind: .removed)),
                .settle(DownloadOutcome(removed)),
            ])
        #expect(!queue.waiting.contains(Self.id("b")))
        // Completed and not waiting: its file goes too, and nobody waited for it.
        let done = try Self.record("done", .completed)
        var gone = done
        gone.status = .removed
        #expect(
            queue.removingNow(done, deleteFile: true, runnerStopped: false, stoppedAgain: false) == [
                .deleteFiles(done, final: true), .releaseName(directory: "/d", name: "done"), .saveRecord(gone),
                .publish(DownloadEvent(id: gone.id, kind: .removed)),
            ])
        // Removed already: not found, unless its run (or one stopped for this remove) said so,
        // and then it is not published twice.
        #expect(
            queue.removingNow(gone, deleteFile: false, runnerStopped: false, stoppedAgain: false).refusal?.code
                == .notFound)
        #expect(
            queue.removingNow(gone, deleteFile: false, runnerStopped: true, stoppedAgain: false) == [
                .deleteFiles(gone, final: false), .releaseName(directory: "/d", name: "done"), .saveRecord(gone),
            ])
    }

    @Test func aRateChangeIsStoredThenAppliedToTheRunAndANonPositiveOneIsRefused() throws {
        let queue = Self.oneRunning()
        let record = try Self.record("a", .running)
        var changed = record
        changed.request.maxBytesPerSecond = 1000
        #expect(queue.changingRate(record, to: 1000) == [.saveRecord(changed), .applyRate(record.id, 1000)])
        changed.request.maxBytesPerSecond = nil
        #expect(queue.changingRate(record, to: nil) == [.saveRecord(changed), .applyRate(record.id, nil)])
        #expect(queue.changingRate(record, to: 0).refusal?.code == .usage)
        #expect(queue.changingRate(record, to: -5).refusal?.code == .usage)
    }

}
