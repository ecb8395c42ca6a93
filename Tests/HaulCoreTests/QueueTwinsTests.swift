import HaulCore
import Testing

/// A digest is an identity (issue 34): two downloads of one SHA-256 at once fetch it once. The
/// rule is the queue's (`QueueSlots`): a head whose digest a run is fetching takes no slot and
/// waits beside that run; when the run completes, it starts with the run's file to copy; when
/// the run does not, it fetches the bytes itself.
@Suite(.timeLimit(.minutes(1))) struct QueueTwinsTests {
    typealias Entry = WaitingQueue.Entry

    static let digest = Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32))
    static let other = Checksum(algorithm: .sha256, hex: String(repeating: "cd", count: 32))

    static func id(_ name: String) -> DownloadID { DownloadID(rawValue: name) }
    static func entry(_ name: String, _ position: Int64, _ digest: Checksum? = Self.digest) -> Entry {
        Entry(id: id(name), priority: 0, position: position, digest: digest)
    }

    @Test func aTwinTakesNoSlotAndStartsWithTheFileOfTheRunThatCompleted() {
        var slots = QueueSlots(limit: 2)
        let started = slots.handle(
            .added([Self.entry("a", 1), Self.entry("twin", 2), Self.entry("b", 3, Self.other)]))
        #expect(started.map(\.id) == [Self.id("a"), Self.id("b")], "the twin's slot went to the next download")
        #expect(slots.isHeld(Self.id("twin")) && slots.isWaiting(Self.id("twin")))
        #expect(slots.waiting.isEmpty)
        // Its transfer ends: the twin still waits for the file to be verified and published.
        #expect(slots.handle(.transferEnded(Self.id("a"), finishBytes: 16_000)).isEmpty)
        #expect(slots.handle(.runEnded(Self.id("a"), copy: "/d/a.bin")).map(\.id) == [Self.id("twin")])
        #expect(slots.takeCopy(Self.id("twin")) == "/d/a.bin")
        #expect(slots.takeCopy(Self.id("twin")) == nil, "taken once")
        #expect(slots.fetching[Self.digest] == nil, "a copy fetches nothing: it is no one's twin")
    }

    @Test func whenTheRunDoesNotCompleteTheFirstTwinFetchesAndTheOthersWaitForIt() {
        var slots = QueueSlots(limit: 3)
        #expect(
            slots.handle(.added([Self.entry("a", 1), Self.entry("t1", 2), Self.entry("t2", 3)])).map(\.id) == [
                Self.id("a")
            ])
        #expect(slots.twins[Self.id("a")]?.map(\.id) == [Self.id("t1"), Self.id("t2")])
        // Paused, failed: no file to copy. The first twin takes the fetch over.
        #expect(slots.handle(.runEnded(Self.id("a"))).map(\.id) == [Self.id("t1")])
        #expect(slots.takeCopy(Self.id("t1")) == nil)
        #expect(slots.fetching[Self.digest] == Self.id("t1"))
        #expect(slots.twins[Self.id("t1")]?.map(\.id) == [Self.id("t2")])
    }

    @Test func aHeldTwinCanLeaveMoveAndIsTakenWithTheWaitingList() {
        var slots = QueueSlots(limit: 1)
        _ = slots.handle(
            .added([Self.entry("a", 1), Self.entry("t1", 2), Self.entry("t2", 3), Self.entry("c", 4, nil)]))
        #expect(slots.running == [Self.id("a")])
        // Limit 1: c waits in the list; t1 and t2 are held only once they reach the head.
        #expect(slots.waiting.entries.map(\.id) == [Self.id("t1"), Self.id("t2"), Self.id("c")])
        _ = slots.handle(.limitChanged(2))
        #expect(slots.running == [Self.id("a"), Self.id("c")])
        #expect(slots.twins[Self.id("a")]?.map(\.id) == [Self.id("t1"), Self.id("t2")])
        // A move keeps a held twin held, at its new place; a pause takes it out.
        _ = slots.handle(.placed([Entry(id: Self.id("t2"), priority: 5, position: 0)]))
        #expect(slots.heldEntry(Self.id("t2"))?.priority == 5)
        #expect(slots.heldEntry(Self.id("t2"))?.digest == Self.digest, "a move keeps the digest")
        _ = slots.handle(.left([Self.id("t1")]))
        #expect(!slots.isWaiting(Self.id("t1")))
        // An add of a held download changes nothing.
        _ = slots.handle(.added([Self.entry("t2", 9)]))
        #expect(!slots.waiting.contains(Self.id("t2")))
        #expect(slots.takeWaiting().map(\.id) == [Self.id("t2")])
        #expect(slots.twins.isEmpty)
    }

    @Test func digestsThatDoNotNameContentMakeNoTwins() throws {
        let md5 = Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))
        var request = try DownloadRequest(url: RemoteURL("http://h/a"), destination: .directory("/d"), checksum: md5)
        func entry(named name: String? = "a.bin") -> Entry {
            var record = DownloadRecord(id: Self.id("a"), request: request, createdAt: 0)
            record.fileName = name
            return Entry(record)
        }
        #expect(entry().digest == nil)
        request.checksum = Self.digest
        #expect(entry().digest == Self.digest)
        #expect(entry(named: nil).digest == nil, "a file named by its response cannot be a copy before a request")
        request.range = ByteRange(start: 0, end: 9)
        #expect(entry().digest == nil, "a range is a slice of the file, not the file")
    }

    /// Through the queue: the completed run's file is the twin's `copy`.
    @Test func theQueueStartsATwinWithTheCompletedFile() throws {
        var queue = DownloadQueue.local(limit: 2)
        let request = try DownloadRequest(
            url: RemoteURL("http://h/a"), destination: .directory("/d"), checksum: Self.digest)
        var a = DownloadRecord(id: Self.id("a"), request: request, createdAt: 0)
        a.fileName = "a.bin"
        var twin = DownloadRecord(id: Self.id("twin"), request: request, createdAt: 0)
        twin.fileName = "twin.bin"
        let started = queue.queued([Entry(a), Entry(twin)])
        #expect(started.filter { if case .startRun = $0 { true } else { false } }.count == 1)
        #expect(queue.isScheduled(Self.id("twin")))
        #expect(queue.state(of: Self.id("twin")) == .waiting(Entry(twin)))
        #expect(!queue.isIdle)
        a.status = .completed
        let actions = queue.runEnded(Self.id("a"), generation: 1, .ran(a, TransferStats(), notModified: false))
        #expect(
            Array(actions.prefix(2)) == [
                .dropRun(Self.id("a")),
                .startRun(Self.id("twin"), generation: 2, place: Entry(twin), given: nil, copy: "/d/a.bin"),
            ])
    }
}

extension QueueTwinsTests {
    /// As the manager adds: each placed while saved, then saved together.
    @Test func twinsAddedOneByOneWhileSavedAreHeld() {
        var queue = DownloadQueue.local(limit: 2)
        var actions = queue.adding([Self.entry("a", 1)])
        actions += queue.adding([Self.entry("b", 2)])
        actions += queue.saved([Self.id("a"), Self.id("b")])
        #expect(actions.filter { if case .startRun = $0 { true } else { false } }.count == 1, "\(actions)")
    }
}
