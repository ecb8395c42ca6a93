/// A batch of adds: what each request is, decided from what the store holds for it, before
/// anything is saved (the batch's events and actions: `DownloadQueue+AddBatch.swift`).
extension DownloadQueue {
    /// What one request of a batch of adds is.
    public enum AddKind: Sendable, Hashable {
        /// The same download as the batch's request at this offset (the same identity): its
        /// record is that one's, and its placement is carried out after the batch, as an
        /// existing download's is.
        case sameAs(Int)
        /// A download the store holds for this URL and destination: picked up (`readd`).
        case existing(DownloadRecord)
        /// The same `-o` as a download that has not completed and is not scheduled here, under
        /// another URL: it goes on from its bytes under the new one (`withNewSources`, saved
        /// before it is picked up).
        case newSources(DownloadRecord)
        /// A new download, saved with this status: queued, or paused when the add asked for it.
        case new(DownloadStatus)

        /// The download that exists already, for `existing` and `newSources`.
        public var existingID: DownloadID? {
            switch self {
            case .existing(let record), .newSources(let record): record.id
            case .sameAs, .new: nil
            }
        }
    }

    /// Refuses a batch of adds the queue cannot take, before anything is read or saved: a
    /// directory that is not absolute, a negative index, an index where the queue cannot be
    /// reordered (a fleet's), or placements that do not match the requests.
    public func checkAdds(
        _ requests: [DownloadRequest], placements: [AddPlacement], groups: [GroupAsk] = []
    ) throws(HaulError) {
        for ask in groups where ask.offsets.lowerBound < 0 || ask.offsets.upperBound > requests.count {
            throw HaulError(.internal, "a group of requests \(ask.offsets) of \(requests.count)")
        }
        for request in requests where !request.directory.hasPrefix("/") {
            throw HaulError(.usage, "destination directory must be an absolute path: \(request.directory)")
        }
        guard placements.count == requests.count else {
            throw HaulError(.internal, "\(placements.count) placements for \(requests.count) adds")
        }
        if let index = placements.compactMap(\.index).first(where: { $0 < 0 }) {
            throw HaulError(.usage, "a queue index must be 0 or more (got \(index))")
        }
        if let refusal = reorderRefusal, placements.contains(where: { $0.index != nil }) { throw refusal }
    }

    /// The kind of each request, in order. `identities[i]`: `requests[i].identity`; `known`: the
    /// stored records by identity; `sameOutput[i]`: the download that holds `requests[i]`'s
    /// explicit name, for those the store does not know by identity.
    public func addKinds(
        _ requests: [DownloadRequest], identities: [String], placements: [AddPlacement],
        known: [String: DownloadRecord], sameOutput: [Int: DownloadRecord]
    ) -> [AddKind] {
        var first: [String: Int] = [:]
        // A download the batch picks up already keeps its URL for a later request's `-o`.
        var taken: Set<DownloadID> = []
        return requests.indices.map { offset in
            let identity = identities[offset]
            if let earlier = first[identity] { return .sameAs(earlier) }
            first[identity] = offset
            if let existing = known[identity] {
                taken.insert(existing.id)
                return .existing(existing)
            }
            if let holder = sameOutput[offset], !taken.contains(holder.id),
                takesNewSources(holder, from: requests[offset])
            {
                taken.insert(holder.id)
                return .newSources(Self.withNewSources(holder, request: requests[offset]))
            }
            return .new(placements[offset].startsPaused ? .paused : .queued)
        }
    }

    /// A new download of the batch, not saved yet, takes its place in the list now: a queued one
    /// among the queued (a slot freed during the save waits for it), a paused one among the
    /// paused (the batch's later adds at an index count it).
    public mutating func addingNew(_ record: DownloadRecord) -> [Action] {
        guard record.status == .paused else { return adding([WaitingQueue.Entry(record)]) }
        if !isFleet {
            paused.insert(WaitingQueue.Entry(record))
            unsavedPaused.insert(record.id)
        }
        return []
    }

    /// The batch's new downloads are saved: the queued ones are published and may take a slot
    /// now; the paused ones are published and settled paused. During a shutdown the queued ones
    /// are settled queued, for the next start: each once (the shutdown settled those that were
    /// in the list when it began).
    public mutating func newSaved(_ records: [DownloadRecord]) -> [Action] {
        unsavedPaused.subtract(records.map(\.id))
        let queued = records.filter { $0.status == .queued }
        var actions: [Action] = queued.map { .publish(DownloadEvent(id: $0.id, kind: .queued)) }
        if !queued.isEmpty { actions += saved(queued.map(\.id)) }
        if isShuttingDown {
            actions += queued.filter { !settledAtShutdown.contains($0.id) }.map {
                .settle(DownloadOutcome(id: $0.id, status: .queued))
            }
        }
        for record in records where record.status == .paused {
            actions += [.publish(DownloadEvent(id: record.id, kind: .paused)), .settle(DownloadOutcome(record))]
        }
        return actions
    }

    /// Whether the download holding `request`'s explicit name goes on under `request`'s URL:
    /// the same name and range, not finished or removed, and not scheduled here (a running one
    /// keeps its URL; the add is then refused by the name check, as any other taken name).
    public func takesNewSources(_ holder: DownloadRecord, from request: DownloadRequest) -> Bool {
        request.fileName != nil && holder.request.fileName == request.fileName
            && holder.request.range == request.range && holder.status != .completed && holder.status != .removed
            && !isScheduled(holder.id)
    }

    /// The offsets whose placement is carried out after the batch: a request that was the same
    /// download as an earlier one, and one whose existing download's placement the add's own
    /// step did not take (`placed` false: running or waiting here already).
    public static func placedAfter(_ kinds: [AddKind], placements: [AddPlacement], placed: [Int: Bool]) -> [Int] {
        kinds.indices.filter { offset in
            if case .sameAs = kinds[offset] { return !placements[offset].isDefault }
            return placed[offset] == false
        }
    }
}
