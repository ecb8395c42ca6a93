import HaulCore
import Testing

/// The queue's scheduling decision (issue 30): a freed slot goes to the head of the waiting list
/// as it stands at that moment, whatever arrives at the same time. The events that met in the
/// daemon (a run's end, an add at position 0, a move, a pause, a larger limit, an add at the
/// tail) are applied here in every order, each checked against a plain sorted array.
@Suite(.timeLimit(.minutes(1))) struct QueueSlotsTests {
    typealias Entry = WaitingQueue.Entry

    static func id(_ name: String) -> DownloadID { DownloadID(rawValue: name) }
    static func entry(_ name: String, _ position: Int64, priority: Int = 0) -> Entry {
        Entry(id: id(name), priority: priority, position: position)
    }

    /// Limit 3: two slow downloads and the ring's big one run; the ring's reserve waits at the
    /// head, slow ones behind it.
    static func loaded() -> QueueSlots {
        var slots = QueueSlots(limit: 3)
        #expect(
            slots.ids(.added([entry("slow1", 1), entry("slow2", 2), entry("ring", 3)])).map(\.rawValue) == [
                "slow1", "slow2", "ring",
            ])
        #expect(slots.ids(.added([entry("reserve", 10)] + (1...5).map { entry("wait\($0)", 100 + Int64($0)) })).isEmpty)
        return slots
    }

    /// What arrives together. Adds and moves are given their places on the list as it stands
    /// when they are applied, as the manager does (`QueuePlaces`).
    enum Arrival: CaseIterable {
        case ringEnded, addAtZero, moveToOne, pauseOne, raiseLimit, addAtTail

        func event(on slots: QueueSlots) -> QueueSlots.Event {
            let list = Array(slots.waiting.entries)
            switch self {
            case .ringEnded: return .runEnded(QueueSlotsTests.id("ring"))
            case .addAtZero:
                let fresh = QueueSlotsTests.entry("next", 1_000)
                guard case .place(let priority, let position) = QueuePlaces.inserting(fresh, in: list, at: 0) else {
                    return .added([fresh])
                }
                return .added([Entry(id: fresh.id, priority: priority, position: position)])
            case .moveToOne:
                guard let current = list.firstIndex(where: { $0.id.rawValue == "wait3" }), list.count > 1,
                    let place = QueuePlaces.moving(in: list, from: current, to: 1)
                else { return .placed([]) }
                return .placed([
                    Entry(id: QueueSlotsTests.id("wait3"), priority: place.priority, position: place.position)
                ])
            case .pauseOne: return .left([QueueSlotsTests.id("wait1")])
            case .raiseLimit: return .limitChanged(4)
            case .addAtTail: return .added([QueueSlotsTests.entry("late", 2_000)])
            }
        }
    }

    /// The same events on a plain array sorted by `QueueOrder`: the starts it expects.
    struct Model {
        var waiting: [Entry]
        var running: Set<DownloadID>
        var limit: Int

        mutating func apply(_ event: QueueSlots.Event) -> [DownloadID] {
            switch event {
            case .added(let entries), .adding(let entries): waiting += entries
            case .saved, .saveFailed: break
            case .placed(let entries):
                for entry in entries {
                    if let index = waiting.firstIndex(where: { $0.id == entry.id }) { waiting[index] = entry }
                }
            case .left(let ids): waiting.removeAll { ids.contains($0.id) }
            case .runEnded(let id, _), .transferEnded(let id, _): running.remove(id)
            case .limitChanged(let count): limit = count
            case .closed: return []
            case .slotAsked, .spokeHTTP2: break
            }
            waiting.sort { $0.runsBefore($1) }
            var starts: [DownloadID] = []
            while running.count < limit, !waiting.isEmpty {
                let head = waiting.removeFirst()
                running.insert(head.id)
                starts.append(head.id)
            }
            return starts
        }
    }

    static func orders<T>(_ items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index in
            var rest = items
            let first = rest.remove(at: index)
            return orders(rest).map { [first] + $0 }
        }
    }

    @Test func everyOrderGivesEachFreedSlotToTheHead() {
        let orders = Self.orders(Arrival.allCases)
        #expect(orders.count == 720)
        for order in orders {
            var slots = Self.loaded()
            var model = Model(waiting: Array(slots.waiting.entries), running: slots.running, limit: slots.limit)
            var started: [DownloadID] = []
            var addedAtZero = false
            for arrival in order {
                let event = arrival.event(on: slots)
                let starts = slots.ids(event)
                #expect(starts == model.apply(event), "\(order): \(arrival)")
                #expect(Array(slots.waiting.entries) == model.waiting, "\(order): \(arrival)")
                // Either every slot is taken or nothing waits.
                #expect(slots.running.count == slots.limit || slots.waiting.isEmpty, "\(order): \(arrival)")
                // Once added at position 0, nothing from behind it starts before it.
                if addedAtZero, !started.contains(Self.id("next")), let first = starts.first {
                    #expect(
                        first == Self.id("next"),
                        "\(order): \(arrival) started \(first) past the download at position 0")
                }
                if arrival == .addAtZero { addedAtZero = true }
                started += starts
            }
            // Two slots are freed (the ring's end, the larger limit): the reserve at the head
            // has one of them in every order.
            #expect(started.count == 2 && started.contains(Self.id("reserve")), "\(order): \(started)")
        }
    }

    /// A run whose bytes are all in gives its slot to the head while it verifies, publishes and
    /// saves; its end then frees nothing more.
    @Test func aFinishedTransferGivesItsSlotToTheHead() {
        var slots = QueueSlots(limit: 1)
        #expect(slots.ids(.added([Self.entry("a", 1), Self.entry("b", 2), Self.entry("c", 3)])) == [Self.id("a")])
        #expect(slots.ids(.transferEnded(Self.id("a"), finishBytes: 16_000)) == [Self.id("b")])
        #expect(slots.running == [Self.id("b")] && slots.finishing == [Self.id("a")])
        #expect(slots.ids(.runEnded(Self.id("a"))).isEmpty, "its slot was given already")
        #expect(slots.finishing.isEmpty)
        // A run that ends without finishing its transfer (failed, paused) frees its slot then.
        #expect(slots.ids(.runEnded(Self.id("b"))) == [Self.id("c")])
        // A transfer end of a run that is not the queue's changes nothing.
        #expect(slots.ids(.transferEnded(Self.id("elsewhere"), finishBytes: 16_000)).isEmpty)
        #expect(slots.ids(.transferEnded(Self.id("c"), finishBytes: 16_000)).isEmpty)
        #expect(
            slots.ids(.transferEnded(Self.id("c"), finishBytes: 16_000)).isEmpty, "told twice: still one finishing run")
        #expect(slots.finishing == [Self.id("c")] && slots.running.isEmpty)
    }

    /// A disk that cannot keep up holds the queue back: at most `finishingLimit` runs finish at
    /// once, and the next download starts when one of them ends.
    @Test func finishingRunsAreCapped() {
        var slots = QueueSlots(limit: 1)
        let names = (0..<20).map { "f\($0)" }
        slots.ids(.added(names.enumerated().map { Self.entry($1, Int64($0)) }))
        #expect(slots.finishingLimit == 16)
        for index in 0..<15 {
            #expect(
                slots.ids(.transferEnded(Self.id(names[index]), finishBytes: 16_000)) == [Self.id(names[index + 1])])
        }
        #expect(
            slots.ids(.transferEnded(Self.id(names[15]), finishBytes: 16_000)).isEmpty,
            "sixteen finishing: nothing starts")
        #expect(slots.running.isEmpty && slots.finishing.count == 16)
        #expect(slots.ids(.runEnded(Self.id(names[3]))) == [Self.id(names[16])])
        // A larger limit allows as many finishing runs as slots.
        #expect(slots.ids(.limitChanged(20)).count == 3)
        #expect(slots.finishingLimit == 20)
    }

    /// Issue 45, the interleaving `control_plane.py` found: slow downloads that never end hold
    /// every slot but one, and a ring of 1 GiB downloads goes through the last one, the next
    /// added at the head each time one completes. A big download's transfer ends long before it
    /// completes (a GiB to sync and verify); the next one then transferred so fast that its own
    /// transfer ended while the first still finished, and its slot went to a slow download. When
    /// the first completed, the ring's new download waited at the head behind 21 slow runs, for
    /// good. A long finish holds its slot, as aria2 counts the download active until it completes.
    @Test func aLongFinishHoldsItsSlotForTheRingAtTheHead() {
        let gigabyte: Int64 = 1 << 30
        var slots = QueueSlots(limit: 2)
        #expect(
            slots.ids(.added((0..<6).map { Self.entry("slow\($0)", 100 + Int64($0)) })) == [
                Self.id("slow0"), Self.id("slow1"),
            ])
        #expect(slots.ids(.added([Self.entry("big1", 0), Self.entry("big2", 1)])).isEmpty)
        #expect(slots.ids(.limitChanged(3)) == [Self.id("big1")])
        #expect(slots.ids(.transferEnded(Self.id("big1"), finishBytes: gigabyte)).isEmpty, "big1 still finishes")
        #expect(slots.running.contains(Self.id("big1")) && slots.finishing.isEmpty)
        #expect(slots.ids(.runEnded(Self.id("big1"))) == [Self.id("big2")])
        // The front-end saw big1 complete: the next one goes to the head.
        #expect(slots.ids(.added([Self.entry("big3", -1)])).isEmpty)
        #expect(slots.ids(.transferEnded(Self.id("big2"), finishBytes: gigabyte)).isEmpty, "big2 still finishes")
        #expect(slots.ids(.runEnded(Self.id("big2"))) == [Self.id("big3")])
        #expect(slots.running == [Self.id("slow0"), Self.id("slow1"), Self.id("big3")])
        // A short finish (at most `shortFinish` bytes to sync and verify) still lends its slot.
        #expect(
            slots.ids(.transferEnded(Self.id("big3"), finishBytes: QueueSlots.shortFinish)) == [Self.id("slow2")])
        #expect(slots.finishing == [Self.id("big3")])
    }

    /// The interleaving the daemon had: `addUri` at position 0 was an add at the tail, then a
    /// move. A run that ended between the two gave its slot to the download at the head then,
    /// a slow one, and the ring's download waited at position 0 for good. Added with its place,
    /// the same end starts it.
    @Test func anAddAtPositionZeroNeverPassesThroughTheTail() {
        var slots = QueueSlots(limit: 2)
        slots.ids(.added([Self.entry("slow", 1), Self.entry("ring", 2), Self.entry("behind", 100)]))
        // The old steps: at the tail first.
        var old = slots
        old.ids(.added([Self.entry("next", 1_000)]))
        #expect(old.ids(.runEnded(Self.id("ring"))) == [Self.id("behind")])
        // In one step, with the place that puts it at index 0.
        let fresh = Self.entry("next", 1_000)
        guard
            case .place(let priority, let position) = QueuePlaces.inserting(
                fresh, in: Array(slots.waiting.entries), at: 0)
        else {
            Issue.record("no place at index 0")
            return
        }
        #expect(slots.ids(.added([Entry(id: fresh.id, priority: priority, position: position)])).isEmpty)
        #expect(slots.ids(.runEnded(Self.id("ring"))) == [Self.id("next")])
        #expect(Array(slots.waiting.entries).map(\.id) == [Self.id("behind")])
    }

    /// A move that spreads positions changes every place it touches at once: the head never
    /// leaves the front while the places are being stored.
    @Test func aSpreadMovesItsEntriesAtOnce() {
        var slots = QueueSlots(limit: 1)
        slots.ids(.added([Self.entry("running", 0)]))
        let crowded = (1...12).map { Self.entry("w\($0)", 100 + Int64($0)) }
        slots.ids(.added(crowded))
        let list = Array(slots.waiting.entries)
        #expect(QueuePlaces.moving(in: list, from: 9, to: 1) == nil)
        let spread = QueuePlaces.spread(list, around: 1)
        let changed = spread.changed.map { spread.list[$0] }
        #expect(!changed.isEmpty)
        slots.ids(.placed(changed))
        #expect(Array(slots.waiting.entries).map(\.id) == list.map(\.id), "a spread keeps the order")
        var moving = Array(slots.waiting.entries)
        guard let place = QueuePlaces.moving(in: moving, from: 9, to: 1) else {
            Issue.record("no room after the spread")
            return
        }
        moving[9].priority = place.priority
        moving[9].position = place.position
        slots.ids(.placed([moving[9]]))
        #expect(slots.waiting.first?.id == Self.id("w1"))
        #expect(slots.waiting[1].id == Self.id("w10"))
        #expect(slots.ids(.runEnded(Self.id("running"))) == [Self.id("w1")])
    }

    /// A move as the places to store: one write where its new neighbours leave room; a spread's
    /// entries first, then the moved one, where they are adjacent; nothing where it is already.
    @Test func aMoveIsOneWriteOrASpreadThenOneWrite() throws {
        let roomy = (0..<4).map { Self.entry("r\($0)", 1_000 * Int64($0)) }
        let one = try QueuePlaces.move(in: roomy, from: 3, to: 1)
        #expect(one.target == 1 && one.changed.map(\.id) == [Self.id("r3")])
        #expect(one.changed[0].position > 0 && one.changed[0].position < 1_000)
        #expect(try QueuePlaces.move(in: roomy, from: 2, to: 2).changed.isEmpty)
        #expect(try QueuePlaces.move(in: roomy, from: 0, to: 99).target == 3, "clamped to the list")

        let crowded = (1...12).map { Self.entry("w\($0)", 100 + Int64($0)) }
        let spread = try QueuePlaces.move(in: crowded, from: 9, to: 1)
        #expect(spread.changed.count > 1, "the neighbours are spread first")
        #expect(spread.changed.last?.id == Self.id("w10"))
        #expect(Set(spread.changed.map(\.id)).count == spread.changed.count, "each entry once")
        var list = crowded
        for entry in spread.changed { list[list.firstIndex { $0.id == entry.id }!] = entry }
        list.sort { $0.runsBefore($1) }
        #expect(
            list.map(\.id) == [Self.id("w1"), Self.id("w10")] + (2...12).filter { $0 != 10 }.map { Self.id("w\($0)") })
    }

    /// An insertion as the places to store: the new entry's place between its neighbours, a
    /// spread's entries first where they are adjacent, none for an add at the end.
    @Test func anInsertionIsOnePlaceOrASpreadThenOnePlace() throws {
        let roomy = (0..<4).map { Self.entry("r\($0)", 1_000 * Int64($0)) }
        let new = Self.entry("new", 9_000)
        let between = try QueuePlaces.insert(new, in: roomy, at: 1)
        #expect(between.spread.isEmpty)
        #expect(between.place.map { $0.position > 0 && $0.position < 1_000 } == true)
        #expect(try QueuePlaces.insert(new, in: roomy, at: 99).place == nil, "last anyway: its own place")

        let crowded = (1...12).map { Self.entry("w\($0)", 100 + Int64($0)) }
        let spread = try QueuePlaces.insert(new, in: crowded, at: 1)
        #expect(!spread.spread.isEmpty, "the neighbours are spread first")
        let place = try #require(spread.place)
        var list = crowded
        for entry in spread.spread { list[list.firstIndex { $0.id == entry.id }!] = entry }
        list.append(WaitingQueue.Entry(id: new.id, priority: place.priority, position: place.position))
        list.sort { $0.runsBefore($1) }
        #expect(list.map(\.id).prefix(3) == [Self.id("w1"), Self.id("new"), Self.id("w2")])
    }

    /// An add at the last index goes after the last entry even when that one has a lower
    /// priority (or a place a move gave it), taking its priority; its own place otherwise.
    @Test func anAddAtTheEndGoesLast() {
        let list = [Self.entry("a", 1), Self.entry("low", 2, priority: -1)]
        #expect(QueuePlaces.inserting(Self.entry("new", 1_000), in: list, at: 2) == .place(-1, 3))
        #expect(QueuePlaces.inserting(Self.entry("new", 1_000), in: list, at: 9) == .place(-1, 3))
        #expect(QueuePlaces.inserting(Self.entry("new", 1_000, priority: -1), in: list, at: 2) == .keep)
        #expect(QueuePlaces.inserting(Self.entry("new", 1_000), in: [], at: 0) == .keep)
        #expect(QueuePlaces.inserting(Self.entry("new", 1_000), in: list, at: 0) == .place(0, 0))
    }

    /// A larger limit gives its slots to the head; a smaller one starts nothing, and a slot freed
    /// over the new limit is not refilled.
    @Test func limitChangesFillFromTheHead() {
        var slots = QueueSlots(limit: 1)
        slots.ids(.added([Self.entry("a", 1), Self.entry("b", 2), Self.entry("c", 3), Self.entry("d", 4)]))
        #expect(slots.ids(.limitChanged(3)) == [Self.id("b"), Self.id("c")])
        #expect(slots.ids(.limitChanged(1)).isEmpty)
        #expect(slots.ids(.runEnded(Self.id("a"))).isEmpty)
        #expect(slots.ids(.runEnded(Self.id("b"))).isEmpty)
        #expect(slots.ids(.runEnded(Self.id("c"))) == [Self.id("d")])
        slots.ids(.closed)
        slots.ids(.added([Self.entry("e", 5)]))
        #expect(slots.ids(.runEnded(Self.id("d"))).isEmpty, "nothing starts after shutdown")
    }

    /// An add at position 0 takes its place before its record is saved; a slot freed during the
    /// save (a run ending while the fsync is under way) waits for it instead of going to the
    /// download behind it, and goes on down the list if the save fails.
    @Test func aSlotFreedDuringAnAddsSaveWaitsForIt() {
        var slots = QueueSlots(limit: 2)
        slots.ids(
            .added([
                Self.entry("slow", 1), Self.entry("ring", 2), Self.entry("behind", 100), Self.entry("further", 101),
            ]))
        let fresh = Self.entry("next", 1_000)
        guard
            case .place(let priority, let position) = QueuePlaces.inserting(
                fresh, in: Array(slots.waiting.entries), at: 0)
        else {
            Issue.record("no place at index 0")
            return
        }
        var failing = slots
        #expect(slots.ids(.adding([Entry(id: fresh.id, priority: priority, position: position)])).isEmpty)
        #expect(slots.ids(.runEnded(Self.id("ring"))).isEmpty, "the slot waits for the add being saved")
        #expect(slots.running.count == 1 && slots.waiting.first?.id == fresh.id)
        #expect(slots.ids(.limitChanged(3)).isEmpty, "nor does a new slot pass it")
        #expect(slots.ids(.saved([fresh.id])) == [fresh.id, Self.id("behind")])

        failing.ids(.adding([Entry(id: fresh.id, priority: priority, position: position)]))
        #expect(failing.ids(.runEnded(Self.id("ring"))).isEmpty)
        #expect(failing.ids(.saveFailed([fresh.id])) == [Self.id("behind")])
        #expect(!failing.waiting.contains(fresh.id))
    }
}

extension QueueSlots {
    /// `handle`, answering the ids to start.
    @discardableResult
    mutating func ids(_ event: Event) -> [DownloadID] { handle(event).map(\.id) }
}
