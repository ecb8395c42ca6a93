/// A batch of adds as events and actions, as AsyncHTTPClient's pool creates a connection
/// (`createConnection` -> `newHTTP1ConnectionCreated`): the queue asks for each read and each
/// record it needs, and hears the answer as the next event. What each request is (`addKinds`),
/// where a new one goes, what is followed, saved, published and answered: all decided here; the
/// manager reads, makes ids and writes.
///
///     addsAsked -> .lookUpAdds -> addsLookedUp -> .readNames -> namesRead
///       -> per request: .readd (then readdAsked) | .makeNew (then newMade) | nothing (the same as an earlier one)
///       -> .saveAdds -> addsCarriedOut -> .saveGroup (its groups) -> .saveNew -> addsSaved
///       -> .readMembers (its groups) -> .answerAdds
///     any failure on the way -> addsFailed (the new ones leave the list and give back their names)
extension DownloadQueue {
    /// The batch of adds under way: its requests, what the store and the names said, and the
    /// answer as it is made.
    public struct AddBatch: Sendable, Hashable {
        var requests: [DownloadRequest]
        var placements: [AddPlacement]
        var identities: [String] = []
        var known: [String: DownloadRecord] = [:]
        var kinds: [AddKind] = [] {
            didSet {
                repeats = [:]
                for (offset, kind) in kinds.enumerated() {
                    if case .sameAs(let earlier) = kind { repeats[earlier, default: []].append(offset) }
                }
            }
        }
        /// The offsets that are the same download as an earlier request, by that one's offset.
        var repeats: [Int: [Int]] = [:]
        /// Each request's record, once decided (the same as an earlier one: filled at the answer).
        var records: [DownloadRecord?]
        /// For each existing download picked up: whether its placement was taken in the batch.
        var placed: [Int: Bool] = [:]
        /// The offsets of the new downloads, in the order they were made.
        var fresh: [Int] = []
        /// The groups the batch makes, and (once its requests are decided) as saved.
        var groups: [GroupAsk]
        var savedGroups: [DownloadGroup] = []

        init(requests: [DownloadRequest], placements: [AddPlacement], groups: [GroupAsk]) {
            self.requests = requests
            self.placements = placements
            self.groups = groups
            records = requests.map { _ in nil }
        }

        /// Each request's record, a repeat's being its earlier one's.
        var resolved: [DownloadRecord?] {
            kinds.indices.map { offset in
                guard case .sameAs(let earlier) = kinds[offset] else { return records[offset] }
                return records[earlier]
            }
        }

        /// The batch's new records, as they stand (places a later spread gave included).
        var freshRecords: [DownloadRecord] { fresh.compactMap { records[$0] } }

        /// The batch's new records take the places a spread gave them (they are not stored yet).
        mutating func take(_ spread: [WaitingQueue.Entry]) {
            let places = Dictionary(uniqueKeysWithValues: spread.map { ($0.id, ($0.priority, $0.position)) })
            for offset in fresh {
                guard let record = records[offset] else { continue }
                records[offset] = record.placed(at: places[record.id])
            }
        }

        /// The request at `offset`, and those that are the same download.
        func sharing(_ offset: Int) -> [Int] { [offset] + (repeats[offset] ?? []) }
    }

    /// A batch of adds is asked for (checked already: `checkAdds`). Refused during the shutdown
    /// (nothing added then would ever start or settle); else its stored records are read.
    public mutating func addsAsked(
        _ requests: [DownloadRequest], placements: [AddPlacement], groups: [GroupAsk] = []
    ) -> [Action] {
        if isShuttingDown { return [.refuse(HaulError(.interrupted, "the download manager is shutting down"))] }
        batch = AddBatch(requests: requests, placements: placements, groups: groups)
        return [.lookUpAdds(requests)]
    }

    /// The store's records of the batch's identities: the explicit names of the requests it
    /// does not know are read next.
    public mutating func addsLookedUp(_ known: [String: DownloadRecord]) -> [Action] {
        guard var batch else { return [] }
        // Each request's identity, made once (it is a string built from four).
        batch.identities = batch.requests.map(\.identity)
        batch.known = known
        self.batch = batch
        let unknown = batch.requests.indices.filter { known[batch.identities[$0]] == nil }
        return [.readNames(Dictionary(uniqueKeysWithValues: unknown.map { ($0, batch.requests[$0]) }))]
    }

    /// The downloads holding the explicit names of the requests the store does not know by
    /// identity (`sameOutput`, by offset): each request's kind is decided, and carried out in
    /// order. A download that exists is followed at once (before anything in the batch can
    /// settle it), given what its request gave, and picked up (`.readd`); the same `-o` under a
    /// new URL is saved with it first; a new one is made (`.makeNew`).
    public mutating func namesRead(_ sameOutput: [Int: DownloadRecord]) -> [Action] {
        guard var batch else { return [] }
        batch.kinds = addKinds(
            batch.requests, identities: batch.identities, placements: batch.placements, known: batch.known,
            sameOutput: sameOutput)
        self.batch = batch
        var actions: [Action] = []
        for (offset, kind) in batch.kinds.enumerated() {
            guard let id = kind.existingID else { continue }
            actions += batch.sharing(offset).map { .follow(offset: $0, id) }
        }
        for (offset, kind) in batch.kinds.enumerated() {
            let request = batch.requests[offset]
            let placement = batch.placements[offset]
            switch kind {
            case .sameAs:
                continue
            case .existing(let existing):
                // Before the re-add: it may start the run at once, which takes them.
                give(request, to: existing.id)
                actions.append(.readd(existing, request: request, placement: placement, offset: offset))
            case .newSources(let renewed):
                // The same `-o` with another URL: the download goes on from its bytes.
                give(request, to: renewed.id)
                actions += [
                    .saveRecord(renewed), .readd(renewed, request: request, placement: placement, offset: offset),
                ]
            case .new(let status):
                actions.append(.makeNew(request, status: status, offset: offset))
            }
        }
        return actions + [.saveAdds]
    }

    /// A new download's record is made (`now`: the clock in microseconds): it takes the next
    /// position (microseconds, and at least `QueuePlaces.gap` after the last, so a move to an
    /// index takes one write), is followed, and takes its place in the list now, at its index
    /// when it has one (`takingPlace`): the batch's later adds at an index count it.
    public mutating func newMade(_ made: DownloadRecord, offset: Int, now: Int64) -> [Action] {
        guard let placement = batch?.placements[offset] else { return [] }
        var record = made
        lastPosition = max(lastPosition + QueuePlaces.gap, now)
        record.position = lastPosition
        give(record.request, to: record.id)
        batch?.records[offset] = record
        batch?.fresh.append(offset)
        var actions: [Action] = (batch?.sharing(offset) ?? []).map { .follow(offset: $0, record.id) }
        if let index = placement.index {
            do {
                actions += try takingPlace(&record, index: index)
            } catch {
                return actions + [.refuse(error)]
            }
        }
        batch?.records[offset] = record
        return actions + addingNew(record)
    }

    /// Every request was carried out: the batch's groups are saved with their members (before
    /// the downloads: a restart between the two finds the group, not a download without its
    /// group), then the new records together.
    public mutating func addsCarriedOut() -> [Action] {
        guard var batch else { return [] }
        batch.savedGroups = groupsOfBatch(batch.groups, records: batch.resolved)
        self.batch = batch
        return batch.savedGroups.map { .saveGroup($0) } + [.saveNew(batch.freshRecords)]
    }

    /// The new records are saved: the queued ones may take a slot, events and outcomes go out
    /// (`newSaved`), and the callers are answered: a request that was the same download as an
    /// earlier one gets that one's record.
    public mutating func addsSaved() -> [Action] {
        guard let batch else { return [] }
        self.batch = nil
        // Its groups are checked (members found complete finish one at once).
        var actions = newSaved(batch.freshRecords) + batch.savedGroups.map { .readMembers($0) }
        let answers = batch.resolved.compactMap { $0 }
        guard answers.count == batch.requests.count else {
            return actions + [.refuse(HaulError(.internal, "a batch of adds was left without an answer"))]
        }
        actions.append(
            .answerAdds(
                answers, placedAfter: Self.placedAfter(batch.kinds, placements: batch.placements, placed: batch.placed))
        )
        return actions
    }

    /// The batch failed before its save was done (a read, a name, a place or the save itself):
    /// nothing new was saved, so the new downloads leave the list and give back their names.
    public mutating func addsFailed() -> [Action] {
        guard let batch else { return [] }
        self.batch = nil
        let fresh = batch.freshRecords
        for group in batch.savedGroups { groupBook.drop(group.id) }
        return saveFailed(fresh.map(\.id))
            + fresh.map { .releaseName(directory: $0.request.directory, name: $0.fileName) }
            + batch.savedGroups.map { .deleteGroup($0.id) }
    }

    /// A re-add of the batch is decided: the answer for `offset` is `record`, and whether its
    /// placement was taken in the batch (false: it is paused or moved after). Nothing when no
    /// batch waits for it.
    mutating func answered(_ offset: Int?, _ record: DownloadRecord, placed: Bool) -> [Action] {
        guard let offset, batch != nil else { return [] }
        batch?.records[offset] = record
        batch?.placed[offset] = placed
        return []
    }

    /// Gives `record` the place that puts it at `index` of the waiting list as it stands (the
    /// batch's new ones placed before it included; `excluding`: a download that exists, placed
    /// anew, not counted where it stands now), spreading the positions around it first when its
    /// neighbours leave no room. The spread is taken at once and stored, but for the batch's new
    /// ones, whose records take it before their save. Throws when even a spread leaves no room.
    mutating func takingPlace(_ record: inout DownloadRecord, index: Int, excluding: DownloadID? = nil)
        throws(HaulError) -> [Action]
    {
        let list = waitingList.map(\.entry).filter { $0.id != excluding }
        let insertion = try QueuePlaces.insert(WaitingQueue.Entry(record), in: list, at: index)
        let unsaved = Set(batch?.freshRecords.map(\.id) ?? [])
        let actions = placing(insertion.spread, unsaved: unsaved, before: list)
        batch?.take(insertion.spread)
        record = record.placed(at: insertion.place)
        return actions
    }
}
