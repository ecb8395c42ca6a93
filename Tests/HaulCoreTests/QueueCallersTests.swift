import HaulCore
import Testing

/// A caller's forget, connection change and new URLs, decided by the queue as actions: a
/// refusal is an action, and the store's writes are actions whose failure is the caller's.
extension DownloadQueueTests {
    @Test func aFinishedDownloadIsForgottenAndAnyOtherOrOneStillRunningIsAConflict() throws {
        let queue = Self.oneRunning()
        let done = try Self.record("done", .completed)
        #expect(queue.forgetting(done) == [.deleteRecords([done.id])])
        #expect(queue.forgetting(try Self.record("b", .queued)).refusal?.code == .conflict)
        #expect(queue.forgetting(try Self.record("p", .paused)).refusal?.code == .conflict)
        // `a` stored its end but its run has not let go of it yet.
        #expect(queue.forgetting(try Self.record("a", .completed)).refusal?.code == .conflict)
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
        #expect(queue.sourcesSaved(renewed) == [.readd(renewed)])
        #expect(!queue.waiting.contains(Self.id("b")))
        var paused = renewed
        paused.status = .paused
        #expect(queue.sourcesSaved(paused) == [])
        // In a fleet, not yet.
        var fleet = Queue.fleet(limit: 1)
        #expect(fleet.changingSources(of: waiting).refusal?.code == .conflict)
    }
}
