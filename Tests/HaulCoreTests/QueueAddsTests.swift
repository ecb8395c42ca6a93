import HaulCore
import Testing

/// A batch of adds decided by the queue: what each request is (the same as an earlier one, a
/// download the store holds, the same `-o` under a new URL, or new, queued or paused), and what a
/// saved batch publishes, settles and starts.
extension DownloadQueueTests {
    static func output(_ url: String, _ name: String, range: ByteRange? = nil) throws -> DownloadRequest {
        try DownloadRequest(url: RemoteURL(url), destination: .file("/d/" + name), range: range)
    }

    @Test func aBatchSaysWhatEachOfItsRequestsIs() throws {
        let queue = Self.oneRunning()
        let known = try Self.record("k", .failed)
        let a = try Self.output("http://h/a", "a.bin")
        let k = known.request
        // An unfinished download holds `n.bin` under another URL: the add goes on from its bytes.
        var holder = try Self.record("n", .paused)
        holder.request = try Self.output("http://old/n", "n.bin")
        let n = try Self.output("http://new/n", "n.bin")
        let paused = try Self.output("http://h/p", "p.bin")
        let requests = [a, k, a, n, paused, k]
        let placements = [
            AddPlacement(), AddPlacement(), AddPlacement(index: 0), AddPlacement(), AddPlacement(startsPaused: true),
            AddPlacement(),
        ]
        let kinds = queue.addKinds(
            requests, identities: requests.map(\.identity), placements: placements, known: [k.identity: known],
            sameOutput: [3: holder])
        #expect(
            kinds == [
                .new(.queued), .existing(known), .sameAs(0), .newSources(Queue.withNewSources(holder, request: n)),
                .new(.paused), .sameAs(1),
            ])
        #expect(kinds.map(\.existingID) == [nil, known.id, nil, holder.id, nil, nil])
        // After the batch: the repeat with an index, and the existing one whose add could not
        // take its placement (it runs or waits here); not the plain repeat.
        #expect(Queue.placedAfter(kinds, placements: placements, placed: [1: false, 3: true]) == [1, 2])
    }

    @Test func theSameOutputGoesOnUnderANewURLOnlyWhenItCan() throws {
        let queue = Self.oneRunning()
        let n = try Self.output("http://new/n", "n.bin")
        func holder(_ status: DownloadStatus, name: String = "n.bin", range: ByteRange? = nil) throws -> DownloadRecord
        {
            var record = try Self.record("h", status)
            record.request = try Self.output("http://old/n", name, range: range)
            return record
        }
        #expect(queue.takesNewSources(try holder(.paused), from: n))
        #expect(queue.takesNewSources(try holder(.failed), from: n))
        // Finished, removed, another name or another range: the name check decides instead.
        #expect(!queue.takesNewSources(try holder(.completed), from: n))
        #expect(!queue.takesNewSources(try holder(.removed), from: n))
        #expect(!queue.takesNewSources(try holder(.paused, name: "other.bin"), from: n))
        #expect(!queue.takesNewSources(try holder(.paused, range: ByteRange(start: 0, end: 9)), from: n))
        // Scheduled here (`b` waits in the queue): it keeps its URL.
        var waiting = try Self.record("b", .queued)
        waiting.request = try Self.output("http://old/n", "n.bin")
        #expect(!queue.takesNewSources(waiting, from: n))
        // A download the batch picks up already (by identity) keeps its URL for a later `-o`.
        var known = try holder(.paused)
        known.request = try Self.output("http://old/n", "n.bin")
        let kinds = queue.addKinds(
            [known.request, n], identities: [known.request.identity, n.identity],
            placements: [AddPlacement(), AddPlacement()], known: [known.request.identity: known],
            sameOutput: [1: known])
        #expect(kinds == [.existing(known), .new(.queued)])
    }

    @Test func aSavedBatchStartsItsQueuedOnesAndSettlesItsPausedOnes() throws {
        var queue = Queue.local(limit: 2)
        let queued = try Self.record("q", .queued)
        let paused = try Self.record("p", .paused)
        // A paused one joins no list; a queued one waits, not started before its save.
        #expect(queue.addingNew(paused) == [])
        #expect(queue.addingNew(queued) == [])
        #expect(queue.isScheduled(queued.id) && !queue.isRunning(queued.id))
        let actions = queue.newSaved([queued, paused])
        #expect(actions.first == .publish(DownloadEvent(id: queued.id, kind: .queued)))
        #expect(actions.contains { if case .startRun(queued.id, _, _, _, _, _) = $0 { true } else { false } })
        #expect(
            Array(actions.suffix(2)) == [
                .publish(DownloadEvent(id: paused.id, kind: .paused)), .settle(DownloadOutcome(paused)),
            ])
        #expect(!queue.isScheduled(paused.id))
    }

    /// A shutdown that begins while a batch is saved settles each of its queued downloads once,
    /// queued for the next start: the shutdown settles those in the list when it began, the
    /// save those added after it (a second outcome broke `outcomes()`' one per download).
    @Test func aBatchSavedDuringAShutdownIsSettledQueuedOnce() throws {
        let early = try Self.record("early", .queued)
        let late = try Self.record("late", .queued)
        var queue = Queue.local(limit: 2)
        _ = queue.addingNew(early)
        var settled = queue.shutdown().filter(\.isSettle)
        _ = queue.addingNew(late)
        let actions = queue.newSaved([early, late])
        settled += actions.filter(\.isSettle)
        #expect(
            settled == [
                .settle(DownloadOutcome(id: early.id, status: .queued)),
                .settle(DownloadOutcome(id: late.id, status: .queued)),
            ])
        #expect(!actions.contains { if case .startRun = $0 { true } else { false } })
        #expect(queue.isIdle)
    }

    /// A re-add decided `.again`: one to be queued whose record changes takes its place first and
    /// is saved after; a paused one is saved first and published paused once; one unchanged is
    /// queued at once.
    @Test func aReaddIsSavedWhereItsPlaceAndItsStatusSay() throws {
        var queue = Self.oneRunning()
        var failed = try Self.record("f", .queued)
        failed.position = 9
        #expect(queue.readdDecided(failed, save: true, wasPaused: false) == [.saveReadd(failed)])
        #expect(queue.isScheduled(failed.id), "in the list before its save")
        let paused = try Self.record("p", .paused)
        #expect(
            queue.readdDecided(paused, save: true, wasPaused: false) == [
                .saveRecord(paused), .publish(DownloadEvent(id: paused.id, kind: .paused)),
                .settle(DownloadOutcome(paused)),
            ])
        #expect(queue.readdDecided(paused, save: false, wasPaused: true) == [], "paused already: nothing to say")
        #expect(!queue.isScheduled(paused.id))
        let unchanged = try Self.record("u", .queued)
        #expect(
            queue.readdDecided(unchanged, save: false, wasPaused: false).first
                == .publish(
                    DownloadEvent(id: unchanged.id, kind: .queued)))
        #expect(queue.isScheduled(unchanged.id))
    }

    @Test func aBatchTheQueueCannotTakeIsRefusedWhole() throws {
        let local = Self.oneRunning()
        let good = try Self.output("http://h/a", "a.bin")
        var relative = good
        relative.directory = "downloads"
        func refusal(_ queue: Queue, _ requests: [DownloadRequest], _ placements: [AddPlacement]) -> HaulError? {
            do {
                try queue.checkAdds(requests, placements: placements)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(local, [good], [AddPlacement(index: 0)]) == nil)
        #expect(refusal(local, [good, relative], [AddPlacement(), AddPlacement()])?.code == .usage)
        #expect(refusal(local, [good], [AddPlacement(index: -1)])?.code == .usage)
        #expect(refusal(local, [good], [])?.code == .internal)
        // A fleet's queue is the database's order: no index can be taken there.
        #expect(refusal(Queue.fleet(limit: 1), [good], [AddPlacement(index: 0)])?.code == .conflict)
        #expect(refusal(Queue.fleet(limit: 1), [good], [AddPlacement(startsPaused: true)]) == nil)
    }
}

extension DownloadQueue.Action {
    var isSettle: Bool { if case .settle = self { true } else { false } }
}
