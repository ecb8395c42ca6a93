import HaulCore
import Testing

/// Groups of downloads as the queue finishes them: saved with their add before its downloads,
/// checked when a member completes (before its outcome), finished once every member completed,
/// kept failed with why when the finish cannot be written, and checked again at every start.
extension DownloadQueueTests {
    static func group(_ name: String, members: [DownloadID] = [], finish: Bool = true) -> DownloadGroup {
        DownloadGroup(
            id: GroupID(rawValue: name), name: "hf://org/\(name)", directory: "/cache", members: members,
            finish: finish
                ? .hubCache(HubCacheFinish(links: [], ref: .init(path: "refs/main", commit: "c"))) : nil,
            createdAt: 1)
    }

    @Test func anAddSavesItsGroupBeforeItsDownloadsAndChecksItOnceSaved() throws {
        var queue = Queue.local(limit: 1)
        let x = try Self.output("http://h/x", "x.bin")
        let y = try Self.output("http://h/y", "y.bin")
        let z = try Self.output("http://h/z", "z.bin")
        // x and y (twice) are the group's; z is another caller's.
        let ask = Queue.GroupAsk(Self.group("g"), offsets: 0..<3)
        _ = queue.addsAsked([x, y, y, z], placements: Array(repeating: AddPlacement(), count: 4), groups: [ask])
        _ = queue.addsLookedUp([:])
        _ = queue.namesRead([:])
        for (offset, name) in [(0, "x"), (1, "y"), (3, "z")] {
            let request = [x, y, y, z][offset]
            _ = queue.newMade(Self.made(name, request, .queued), offset: offset, now: Int64(offset + 1) * 100)
        }
        let saved = Self.group("g", members: [Self.id("x"), Self.id("y")])
        let carried = queue.addsCarriedOut()
        #expect(carried.first == .saveGroup(saved))
        guard case .saveNew = carried.last, carried.count == 2 else {
            Issue.record("expected the group's save, then the downloads', got \(carried)")
            return
        }
        let answered = queue.addsSaved()
        #expect(answered.contains(.readMembers(saved)))
        #expect(answered.firstIndex(of: .readMembers(saved))! < answered.count - 1, "checked before the answer")
    }

    @Test func aGroupIsFinishedWhenItsLastMemberCompletesBeforeThatOutcomeIsTold() throws {
        var queue = Queue.local(limit: 2)
        _ = queue.queued([Self.place("a", 1), Self.place("b", 2)])
        let group = Self.group("g", members: [Self.id("a"), Self.id("b")])
        #expect(queue.groupsRead([group]) == [.readMembers(group)])
        let a = try Self.record("a", .completed)
        var b = try Self.record("b", .running)
        // a completes: its group is read before its outcome; b still runs, so it waits.
        let ended = queue.runEnded(a.id, generation: 1, Self.ran(a))
        let check = try #require(ended.firstIndex(of: .readMembers(group)))
        #expect(check < ended.firstIndex { if case .settle = $0 { true } else { false } }!)
        #expect(queue.membersRead(group, [a, b]) == [])
        // b completes: every member is in, so the finish is written, and the group stored finished.
        b.status = .completed
        #expect(queue.runEnded(b.id, generation: 2, Self.ran(b)).contains(.readMembers(group)))
        #expect(queue.membersRead(group, [a, b]) == [.writeFinish(group)])
        var finished = group
        finished.state = .finished
        #expect(queue.finishWritten(group) == [.saveGroup(finished)])
        // Finished: a later completion of a member reads nothing.
        #expect(!queue.runEnded(a.id, generation: 1, Self.ran(a)).contains(.readMembers(group)))
    }

    /// Once a group's members were read, a completion reads them again only when it was the
    /// last one the group waited for: a group of N files costs two reads of its members, not N
    /// (a dataset of 5,000 files was 12.5 million rows read back). A removal reads at once.
    @Test func aGroupIsReadAgainOnlyWhenTheLastMemberItWaitedForCompletes() throws {
        var queue = Queue.local(limit: 3)
        _ = queue.queued([Self.place("a", 1), Self.place("b", 2), Self.place("c", 3), Self.place("d", 4)])
        let group = Self.group("g", members: [Self.id("a"), Self.id("b"), Self.id("c"), Self.id("d")])
        #expect(queue.groupsRead([group]) == [.readMembers(group)])
        // Read: a completed already (before a restart), b, c and d not yet.
        var records = try ["a", "b", "c", "d"].map { try Self.record($0, $0 == "a" ? .completed : .running) }
        #expect(queue.membersRead(group, records) == [])
        func reads(_ actions: [Queue.Action]) -> Bool { actions.contains(.readMembers(group)) }
        for (index, generation) in [(1, UInt64(2)), (2, 3)] {
            records[index].status = .completed
            #expect(!reads(queue.runEnded(records[index].id, generation: generation, Self.ran(records[index]))))
        }
        // d, the last one: read, and the finish written.
        records[3].status = .completed
        let last = queue.runEnded(records[3].id, generation: 4, Self.ran(records[3]))
        #expect(reads(last), "\(last)")
        #expect(queue.membersRead(group, records) == [.writeFinish(group)])

        // Another group: a removal reads its members at once, however many it waits for.
        var other = Queue.local(limit: 2)
        let pair = Self.group("h", members: [Self.id("a"), Self.id("b")])
        _ = other.groupsRead([pair])
        _ = other.membersRead(pair, try [Self.record("a", .running), Self.record("b", .running)])
        #expect(
            other.removed(try Self.record("a", .removed), runnerSaidSo: false, wasWaiting: false)
                .contains(.readMembers(pair)))
    }

    @Test func aFailedFinishIsKeptWithWhyAndTriedAgainAtTheNextCompletion() throws {
        var queue = Queue.local(limit: 1)
        let group = Self.group("g", members: [Self.id("a")])
        _ = queue.groupsRead([group])
        var failed = group
        failed.state = .failed
        failed.error = "no space left on device"
        // Stored failed with why, and told as an event of its leader (the download its add answered with).
        let full = HaulError(.fileSystem, "no space left on device")
        #expect(
            queue.finishFailed(group, full) == [
                .saveGroup(failed),
                .publish(DownloadEvent(id: Self.id("a"), kind: .finishFailed(group: group.id, name: group.name, full))),
            ])
        // Found complete again by an add: checked again, as it failed.
        let a = try Self.record("a", .completed)
        #expect(queue.alreadyComplete(a, path: "/d/a").first == .readMembers(failed))
        // A group without a finish is finished as soon as its members are.
        let plain = Self.group("s3", members: [Self.id("a")], finish: false)
        var done = plain
        done.state = .finished
        #expect(queue.membersRead(plain, [a]) == [.saveGroup(done)])
    }

    @Test func aGroupWhoseDownloadIsGoneSaysSoAndABatchThatFailsDeletesItsGroup() throws {
        var queue = Queue.local(limit: 1)
        let group = Self.group("g", members: [Self.id("a"), Self.id("gone")])
        var failed = group
        failed.state = .failed
        failed.error = "download gone of hf://org/g is gone"
        #expect(queue.membersRead(group, [try Self.record("a", .completed)]).first == .saveGroup(failed))
        // An add whose downloads' save failed takes its group back.
        let x = try Self.output("http://h/x", "x.bin")
        _ = queue.addsAsked([x], placements: [AddPlacement()], groups: [.init(Self.group("h"), offsets: 0..<1)])
        _ = queue.addsLookedUp([:])
        _ = queue.namesRead([:])
        _ = queue.newMade(Self.made("x", x, .queued), offset: 0, now: 1)
        _ = queue.addsCarriedOut()
        #expect(queue.addsFailed().last == .deleteGroup(GroupID(rawValue: "h")))
        // Nothing is left of it: x's completion reads no group.
        #expect(
            !queue.alreadyComplete(Self.made("x", x, .completed), path: "/d/x.bin").contains { action in
                if case .readMembers = action { true } else { false }
            })
    }

    @Test func aRemovedMemberFailsItsGroupAtOnceWithWhyAndNoFinishIsWritten() throws {
        var queue = Queue.local(limit: 1)
        let group = Self.group("g", members: [Self.id("a"), Self.id("b")])
        _ = queue.groupsRead([group])
        var b = try Self.record("b", .removed)
        // Its remove checks its groups: the members are read, whatever the others' state.
        #expect(queue.removed(b, runnerSaidSo: false, wasWaiting: false).contains(.readMembers(group)))
        // One member removed: failed with why (its file will not come), never written.
        let read = queue.membersRead(group, [try Self.record("a", .completed), b])
        #expect(!read.contains(.writeFinish(group)))
        guard case .saveGroup(let failed) = read.first else {
            Issue.record("the group is not saved failed: \(read)")
            return
        }
        #expect(failed.state == .failed)
        #expect(failed.error == "download b of hf://org/g was removed")
        // Added again and completed: the next check writes the finish.
        b.status = .completed
        #expect(queue.membersRead(failed, [try Self.record("a", .completed), b]) == [.writeFinish(failed)])
        // A download of no group reads nothing when removed.
        #expect(
            !queue.removed(try Self.record("c", .removed), runnerSaidSo: false, wasWaiting: false).contains {
                if case .readMembers = $0 { true } else { false }
            })
    }

    @Test func aForgottenMemberOfAnUnfinishedGroupHasItCheckedOnceGone() throws {
        var queue = Queue.local(limit: 1)
        let group = Self.group("g", members: [Self.id("a"), Self.id("b")])
        _ = queue.groupsRead([group])
        let failed = try Self.record("b", .failed)
        #expect(queue.forgetting(failed) == [.deleteRecords([failed.id]), .readMembers(group)])
        // A purge checks each group once, after every record went.
        #expect(
            queue.forgettingFinished([Self.id("a"), Self.id("b"), Self.id("c")]) == [
                .deleteRecords([Self.id("a"), Self.id("b"), Self.id("c")]), .readMembers(group),
            ])
        // Read with b gone, the group fails with why.
        #expect(queue.membersRead(group, [try Self.record("a", .completed)]).count == 2)
    }

    @Test func aFleetHostLooksAtTheUnfinishedGroupsOnceALease() {
        var fleet = Queue.fleet(limit: 1, leaseTimeout: .seconds(10))
        // The start read them; the first tick starts the clock.
        #expect(!fleet.tick(now: 100).contains(.readGroups))
        #expect(!fleet.tick(now: 109.9).contains(.readGroups))
        // A lease later: a group another host completed and died before finishing is found.
        #expect(fleet.tick(now: 110).contains(.readGroups))
        #expect(!fleet.tick(now: 111).contains(.readGroups))
        #expect(fleet.tick(now: 120).contains(.readGroups))
    }

    @Test func aFleetHostReadsACompletedDownloadsGroupsFromTheDatabase() throws {
        var fleet = Queue.fleet(limit: 1)
        let group = Self.group("g", members: [Self.id("x")])
        var finished = group
        finished.state = .finished
        #expect(fleet.memberGroupsRead([group, finished]) == [.readMembers(group)])
        // Groups read at start are checked, not kept: the database is the fleet's book.
        #expect(fleet.groupsRead([group]) == [.readMembers(group)])
        #expect(
            fleet.alreadyComplete(try Self.record("x", .completed), path: "/d/x").first == .readGroupsOf(Self.id("x")))
    }
}
