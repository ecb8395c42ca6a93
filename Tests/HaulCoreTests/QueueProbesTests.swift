import HaulCore
import Testing

/// Requests in flight past `-j` (issue 48, `SlotProbes`): with every slot taken, a download that
/// may be small is sent without one, up to the host's room; one whose response is large asks for
/// a slot and gets it at the place it had, before the downloads behind it and after those before.
@Suite(.timeLimit(.minutes(1))) struct QueueProbesTests {
    typealias Entry = WaitingQueue.Entry

    static func id(_ name: String) -> DownloadID { DownloadID(rawValue: name) }
    static func small(_ name: String, _ position: Int64, host: String = "https://h:443") -> Entry {
        Entry(id: id(name), priority: 0, position: position, probeHost: host)
    }
    static func large(_ name: String, _ position: Int64) -> Entry {
        Entry(id: id(name), priority: 0, position: position)
    }
    static func names(_ entries: [Entry]) -> [String] { entries.map(\.id.rawValue) }

    @Test func withTheSlotsTakenSmallOnesGoAsProbesUpToTheHostsRoom() {
        var slots = QueueSlots(limit: 2, http1Probes: 3)
        let started = slots.handle(.added((1...8).map { Self.small("f\($0)", Int64($0)) }))
        #expect(Self.names(started) == ["f1", "f2", "f3", "f4", "f5"], "two slots, then three probes")
        #expect(slots.running == [Self.id("f1"), Self.id("f2")])
        #expect(slots.probes.probing.keys.sorted { $0.rawValue < $1.rawValue } == ["f3", "f4", "f5"].map(Self.id))
        #expect(slots.probes.perHost["https://h:443"] == 3)
        // A probe's transfer ending frees nothing: it counts until its run ends (its finish too).
        #expect(slots.handle(.transferEnded(Self.id("f3"), finishBytes: 16_384)).isEmpty)
        #expect(Self.names(slots.handle(.runEnded(Self.id("f3")))) == ["f6"])
        #expect(slots.probes.isProbing(Self.id("f6")))
        // A slot's run ending gives its slot to the head (f7), which holds it.
        #expect(Self.names(slots.handle(.runEnded(Self.id("f1")))) == ["f7"])
        #expect(slots.running.contains(Self.id("f7")) && !slots.probes.isProbing(Self.id("f7")))
    }

    @Test func anotherHostHasItsOwnRoomAndALargeHeadWaitsForASlot() {
        var slots = QueueSlots(limit: 1, http1Probes: 1)
        let started = slots.handle(
            .added([
                Self.small("a", 1), Self.small("b", 2), Self.small("c", 3, host: "https://other:443"),
            ]))
        // b probes on h; c is behind b and probes on its own host once b went.
        #expect(Self.names(started) == ["a", "b", "c"])
        // A head known to be large is never a probe: it and everything behind it wait.
        var held = QueueSlots(limit: 1, http1Probes: 4)
        #expect(
            Self.names(held.handle(.added([Self.small("x", 1), Self.large("big", 2), Self.small("y", 3)]))) == ["x"])
        #expect(held.probes.probing.isEmpty)
    }

    @Test func aProbeThatAsksGetsTheNextSlotBeforeTheHeadsBehindIt() {
        var slots = QueueSlots(limit: 1, http1Probes: 2)
        #expect(
            Self.names(slots.handle(.added((1...5).map { Self.small("f\($0)", Int64($0)) }))) == ["f1", "f2", "f3"])
        // f3's response is large: it asks, and waits (the slot is f1's).
        #expect(slots.handle(.slotAsked(Self.id("f3"))).isEmpty)
        #expect(slots.takeGrants().isEmpty)
        // f1 ends: the slot goes to f3 (position 3 comes before f4, the head), not to f4.
        #expect(slots.handle(.runEnded(Self.id("f1"))).map(\.id) == [Self.id("f4")], "f3's room goes to f4")
        #expect(slots.takeGrants() == [Self.id("f3")])
        #expect(slots.takeGrants().isEmpty, "taken once")
        #expect(slots.running == [Self.id("f3")] && !slots.probes.isProbing(Self.id("f3")))
        #expect(slots.probes.isProbing(Self.id("f4")))
    }

    @Test func aHeadThatComesFirstTakesTheSlotBeforeAnAskingProbe() {
        var slots = QueueSlots(limit: 1, http1Probes: 1)
        #expect(Self.names(slots.handle(.added([Self.small("a", 1), Self.small("p", 5)]))) == ["a", "p"])
        _ = slots.handle(.slotAsked(Self.id("p")))
        // Added at position 2, ahead of p's place 5: the freed slot is its.
        _ = slots.handle(.added([Self.large("urgent", 2)]))
        #expect(Self.names(slots.handle(.runEnded(Self.id("a")))) == ["urgent"])
        #expect(slots.takeGrants().isEmpty)
        // The next slot is p's.
        #expect(slots.handle(.runEnded(Self.id("urgent"))).isEmpty)
        #expect(slots.takeGrants() == [Self.id("p")])
    }

    @Test func anHTTP2HostTakesAHundredAndNoProbesMeansNone() {
        var slots = QueueSlots(limit: 1, http1Probes: 2)
        _ = slots.handle(.added((1...200).map { Self.small("f\($0)", Int64($0)) }))
        #expect(slots.probes.probing.count == 2)
        _ = slots.handle(.spokeHTTP2("https://h:443"))
        #expect(slots.probes.probing.count == SlotProbes.http2Limit)
        var none = QueueSlots(limit: 1)
        _ = none.handle(.spokeHTTP2("https://h:443"))
        #expect(Self.names(none.handle(.added([Self.small("a", 1), Self.small("b", 2)]))) == ["a"])
    }

    @Test func aProbeThatEndsWhileAskingLeavesNoClaim() {
        var slots = QueueSlots(limit: 1, http1Probes: 1)
        _ = slots.handle(.added([Self.small("a", 1), Self.small("b", 2), Self.small("c", 3)]))
        _ = slots.handle(.slotAsked(Self.id("b")))
        // b is stopped (paused) while it waits: its room goes to c, and no slot is kept for it.
        #expect(Self.names(slots.handle(.runEnded(Self.id("b")))) == ["c"])
        _ = slots.handle(.runEnded(Self.id("a")))
        #expect(slots.takeGrants().isEmpty)
        #expect(slots.probes.asking.isEmpty)
    }

    @Test func theQueueSaysWhichStartsAreProbesAndGrantsAnAskingOne() throws {
        var queue = DownloadQueue.local(limit: 1, http1Probes: 2)
        let actions = queue.queued([Self.small("a", 1), Self.small("b", 2)])
        let starts = actions.compactMap { action -> (String, Bool)? in
            if case .startRun(let id, _, _, _, _, let probe) = action { return (id.rawValue, probe) }
            return nil
        }
        #expect(starts.map(\.0) == ["a", "b"] && starts.map(\.1) == [false, true])
        // A stale generation asks nothing.
        #expect(queue.slotAsked(Self.id("b"), generation: 99).isEmpty)
        #expect(queue.slotAsked(Self.id("b"), generation: 2).isEmpty)
        let record = DownloadRecord(
            id: Self.id("a"),
            request: try DownloadRequest(url: RemoteURL("https://h/a"), destination: .directory("/d")), createdAt: 0)
        var done = record
        done.status = .completed
        let ended = queue.runEnded(Self.id("a"), generation: 1, .ran(done, TransferStats(), notModified: false))
        #expect(ended.contains(.grantSlot(Self.id("b"))))
    }

    /// What may be sent without a slot, and which responses need one.
    @Test func whatIsSmallAndWhatNeedsASlot() throws {
        var record = DownloadRecord(
            id: Self.id("r"),
            request: try DownloadRequest(url: RemoteURL("https://h.example/x"), destination: .directory("/d")),
            createdAt: 0)
        #expect(SlotProbes.host(of: record) == "https://h.example:443", "nothing known yet")
        record.totalLength = 2 << 20
        #expect(SlotProbes.host(of: record) == nil, "known to be large")
        record.request.range = ByteRange(start: 0, end: 1_000)
        #expect(SlotProbes.host(of: record) != nil, "a small range of a large file")
        func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
            ResponseHead(
                status: status, headers: HTTPHeaderList(fields.map { .init(name: $0.0, value: $0.1) }),
                url: "https://h.example/x")
        }
        #expect(!SlotProbes.needsSlot(head(200, [("Content-Length", "16384")])))
        #expect(!SlotProbes.needsSlot(head(200, [("Content-Length", "1048576")])))
        #expect(SlotProbes.needsSlot(head(200, [("Content-Length", "1048577")])))
        #expect(SlotProbes.needsSlot(head(200, [])), "no length")
        #expect(SlotProbes.needsSlot(head(206, [("Content-Range", "bytes 0-2097151/2097152")])))
        #expect(!SlotProbes.needsSlot(head(206, [("Content-Range", "bytes 0-99/2097152")])))
        #expect(!SlotProbes.needsSlot(head(404, [])))
    }
}
