import HaulCore
import Testing

/// A batch of adds as the queue's events and actions, from the ask to the callers' answer: the
/// reads it asks for, who is followed, what is made, placed, saved and answered, and what a
/// failure takes back. No store, no server: the test answers each action as the manager would.
extension DownloadQueueTests {
    static func made(_ name: String, _ request: DownloadRequest, _ status: DownloadStatus) -> DownloadRecord {
        var record = DownloadRecord(id: id(name), request: request, createdAt: 0)
        record.status = status
        return record
    }

    @Test func aBatchReadsDecidesFollowsMakesSavesAndAnswersInOrder() throws {
        var queue = Self.oneRunning()
        let x = try Self.output("http://h/x", "x.bin")
        let p = try Self.output("http://h/p", "p.bin")
        var known = try Self.record("k", .failed)
        known.request = try Self.output("http://h/k", "k.bin")
        let k = known.request
        let requests = [x, k, x, p]
        let placements = [AddPlacement(), AddPlacement(), AddPlacement(index: 0), AddPlacement(startsPaused: true)]
        #expect(queue.addsAsked(requests, placements: placements) == [.lookUpAdds(requests)])
        // The names of those the store does not know by identity, by offset.
        #expect(queue.addsLookedUp([k.identity: known]) == [.readNames([0: x, 2: x, 3: p])])
        #expect(
            queue.namesRead([:]) == [
                .follow(offset: 1, known.id),
                .makeNew(x, status: .queued, offset: 0),
                .readd(known, request: k, placement: AddPlacement(), offset: 1),
                .makeNew(p, status: .paused, offset: 3),
                .saveAdds,
            ])
        // The new one takes the next position, is followed for its request and the repeat, and
        // waits in the list (not started before its save).
        let xMade = queue.newMade(Self.made("x", x, .queued), offset: 0, now: 1_000)
        #expect(xMade == [.follow(offset: 0, Self.id("x")), .follow(offset: 2, Self.id("x"))])
        #expect(queue.isScheduled(Self.id("x")) && !queue.isRunning(Self.id("x")))
        // The known one is queued again: its record changes, so it takes its place and is saved.
        var readded = known
        readded.status = .queued
        readded.error = nil
        let readd = queue.readdAsked(known, request: k, finalFile: nil, placement: AddPlacement(), offset: 1)
        #expect(readd.last == .saveReadd(readded))
        // A paused new one: at least a gap after the last, though the clock went back.
        #expect(queue.newMade(Self.made("p", p, .paused), offset: 3, now: 10) == [.follow(offset: 3, Self.id("p"))])
        var xRecord = Self.made("x", x, .queued)
        xRecord.position = 1_000
        var pRecord = Self.made("p", p, .paused)
        pRecord.position = 1_000 + QueuePlaces.gap
        #expect(queue.addsCarriedOut() == [.saveNew([xRecord, pRecord])])
        #expect(Self.names(queue) == ["k", "b", "c", "x", "p*"])
        // Saved: published, the paused one settled; the repeat gets x's record and is placed after.
        #expect(
            queue.addsSaved() == [
                .publish(DownloadEvent(id: xRecord.id, kind: .queued)),
                .publish(DownloadEvent(id: pRecord.id, kind: .paused)), .settle(DownloadOutcome(pRecord)),
                .answerAdds([xRecord, readded, xRecord, pRecord], placedAfter: [2]),
            ])
        // The batch is over: a late answer changes nothing.
        #expect(queue.addsSaved() == [] && queue.addsFailed() == [])
    }

    @Test func newOnesAtAnIndexTakeTheirPlacesAndASpreadMovesTheBatchsEarlierOnesUnstored() throws {
        var queue = Self.oneRunning()
        let x = try Self.output("http://h/x", "x.bin")
        let y = try Self.output("http://h/y", "y.bin")
        _ = queue.addsAsked([x, y], placements: [AddPlacement(index: 1), AddPlacement(index: 1)])
        _ = queue.addsLookedUp([:])
        _ = queue.namesRead([:])
        // Between b (2) and c (3): no room, so a spread first; b and c are stored, x is not.
        let xActions = queue.newMade(Self.made("x", x, .queued), offset: 0, now: 1_000)
        // Between b and x: x may move again in the spread, and its record takes it before the save.
        let yActions = queue.newMade(Self.made("y", y, .queued), offset: 1, now: 2_000)
        #expect(Self.names(queue) == ["b", "y", "x", "c"])
        let stored = (xActions + yActions).flatMap { action -> [DownloadID] in
            guard case .storePlaces(let entries, _) = action else { return [] }
            return entries.map(\.id)
        }
        #expect(!stored.isEmpty && !stored.contains(Self.id("x")) && !stored.contains(Self.id("y")))
        guard case .saveNew(let records) = queue.addsCarriedOut().first else {
            Issue.record("expected the new ones' save")
            return
        }
        // Each new record is saved with the place it holds in the list.
        let places = Dictionary(uniqueKeysWithValues: queue.waiting.entries.map { ($0.id, $0) })
        #expect(records.map(\.id) == [Self.id("x"), Self.id("y")])
        #expect(records.allSatisfy { WaitingQueue.Entry($0) == places[$0.id] })
    }

    @Test func aReaddAtAnIndexWhoseSpreadMovesTheBatchsNewOneLeavesItUnstoredAndSavesItsNewPlace() throws {
        var queue = Queue.local(limit: 1)
        _ = queue.queued([Self.place("a", 1), Self.place("b", 2), Self.place("c", 63)])
        let x = try Self.output("http://h/x", "x.bin")
        var known = try Self.record("k", .failed, at: 100)
        known.request = try Self.output("http://h/k", "k.bin")
        let placements = [AddPlacement(), AddPlacement(index: 2)]
        _ = queue.addsAsked([x, known.request], placements: placements)
        _ = queue.addsLookedUp([known.request.identity: known])
        _ = queue.namesRead([:])
        // The first new position is a gap past nothing: 64, right after c.
        _ = queue.newMade(Self.made("x", x, .queued), offset: 0, now: 0)
        #expect(queue.waiting.entries.last?.id == Self.id("x") && queue.waiting.entries.last?.position == 64)
        // k between c and x: no room, so the positions around spread, x's among them; x is not
        // stored yet, so its record takes its new place before its save.
        let actions = queue.readdAsked(
            known, request: known.request, finalFile: nil, placement: placements[1], offset: 1)
        #expect(Self.names(queue) == ["b", "c", "k", "x"])
        #expect(queue.waiting.entries.last?.position != 64, "the spread moved x")
        let stored = actions.flatMap { action -> [DownloadID] in
            guard case .storePlaces(let entries, _) = action else { return [] }
            return entries.map(\.id)
        }
        #expect(!stored.contains(Self.id("x")))
        guard case .saveNew(let records) = queue.addsCarriedOut().first else {
            Issue.record("expected the new one's save")
            return
        }
        let places = Dictionary(uniqueKeysWithValues: queue.waiting.entries.map { ($0.id, $0) })
        #expect(records.count == 1 && records.allSatisfy { WaitingQueue.Entry($0) == places[$0.id] })
    }

    @Test func aBatchThatFailsTakesItsNewOnesBackAndGivesBackTheirNames() throws {
        var queue = Self.oneRunning()
        let x = try Self.output("http://h/x", "x.bin")
        _ = queue.addsAsked([x], placements: [AddPlacement()])
        _ = queue.addsLookedUp([:])
        _ = queue.namesRead([:])
        var xRecord = Self.made("x", x, .queued)
        _ = queue.newMade(xRecord, offset: 0, now: 5)
        xRecord.position = 5
        #expect(queue.isScheduled(xRecord.id))
        // Its save failed (or a later step did): out of the list, its name given back.
        #expect(queue.addsFailed() == [.releaseName(directory: "/d", name: "x.bin")])
        #expect(!queue.isScheduled(xRecord.id) && Self.names(queue) == ["b", "c"])
        #expect(queue.addsSaved() == [])
    }

    @Test func aBatchDuringTheShutdownIsRefusedBeforeAnythingIsRead() throws {
        var queue = Self.oneRunning()
        _ = queue.shutdown()
        let x = try Self.output("http://h/x", "x.bin")
        #expect(
            queue.addsAsked([x], placements: [AddPlacement()]) == [
                .refuse(HaulError(.interrupted, "the download manager is shutting down"))
            ])
        #expect(queue.addsFailed() == [])
    }
}
