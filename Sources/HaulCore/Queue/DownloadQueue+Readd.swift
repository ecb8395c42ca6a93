/// Adding a download that already exists (the same URL and destination, or the same `-o`):
/// what becomes of its record, decided from the record, the request and what is on disk.
extension DownloadQueue {
    /// What a re-add does.
    public enum Readd: Sendable, Hashable {
        /// Running or waiting here already: left as it is (not started twice).
        case scheduled
        /// Its completed file is intact: reported complete, nothing runs.
        case alreadyComplete(DownloadRecord, path: String)
        /// It goes on from `record`: queued again, or (added paused) saved paused without ever
        /// joining the queue. `save`: its stored record must change first. `checkName`: its
        /// file went missing, so it starts over under a name checked again.
        case again(DownloadRecord, save: Bool, checkName: Bool)
    }

    /// The completed file of a download, where its record says it is: its path, and its size
    /// (nil when it is gone).
    public struct FinalFile: Sendable, Hashable {
        /// Where the file is: the path its record gives.
        public var path: String
        /// Its size in bytes; nil when no file is there.
        public var size: Int64?

        /// The file at `path`, of `size` bytes (nil: none there).
        public init(path: String, size: Int64?) {
            self.path = path
            self.size = size
        }
    }

    /// Decides a re-add of `existing` with `request`. `finalFile`: a completed download's file
    /// as found on disk (nil for any other, or when it has no name yet). `startsPaused`: the
    /// add asked for it paused (aria2's `pause`): one that is not scheduled here is saved paused
    /// and never starts, requests or creates a `.part` on the way.
    public func readd(
        _ existing: DownloadRecord, request: DownloadRequest, finalFile: FinalFile?,
        startsPaused: Bool
    ) -> Readd {
        if isScheduled(existing.id) { return .scheduled }
        // Added paused again: it stays as it is.
        if startsPaused, existing.status == .paused { return .again(existing, save: false, checkName: false) }
        var record = existing
        record.request = request
        var checkName = false
        if existing.status == .completed {
            // `-N` asks the server instead (If-Modified-Since): its run ends at once on a 304.
            if let finalFile, let size = finalFile.size,
                existing.expectedLength == nil || existing.expectedLength == size,
                !request.timestamping
            {
                return .alreadyComplete(existing, path: finalFile.path)
            }
            // The finished file is gone or changed: fetch it again.
            record = DownloadRecord(id: existing.id, request: request, createdAt: existing.createdAt)
            record.position = existing.position
            // `-N` compares with the file this download published, under the name it had.
            if request.timestamping, finalFile?.size != nil { record.fileName = record.fileName ?? existing.fileName }
            checkName = true
        }
        let status: DownloadStatus = startsPaused ? .paused : .queued
        if startsPaused || !existing.status.resumesAfterRestart || record.request != existing.request {
            // Left alone otherwise: the record may belong to another process running it right
            // now (the download lock decides), and its checkpoints must not be overwritten.
            record.status = status
            record.error = nil
            return .again(record, save: true, checkName: checkName)
        }
        return .again(record, save: false, checkName: checkName)
    }

    /// A re-add under way, carried from one of its actions to the next: the record as it goes
    /// on, whether it must be saved first, the index of the waiting list it takes (nil: its own
    /// place) and whether it was paused before.
    public struct ReaddStep: Sendable, Hashable {
        /// The record as it goes on.
        public var record: DownloadRecord
        /// Whether its stored record must change.
        public var save: Bool
        /// The index of the waiting list it takes; nil: the place its record has.
        public var index: Int?
        /// Whether it was paused before the add (published paused again only if it was not).
        public var wasPaused: Bool
        /// Its request's offset in the batch of adds under way, which hears the answer; nil for
        /// a re-add no caller waits for (a resume, new URLs).
        public var offset: Int?
    }

    /// An add of `existing` (the same download) with `request`, as actions: one scheduled here
    /// is left as it is; one whose completed file is intact (`finalFile`) is reported complete;
    /// any other goes on (`readd`): its name checked again when its file went (`.checkName`,
    /// then `readdNameChecked`), its place taken at its index, then saved and queued or
    /// published paused (`readdDecided`). The batch under way hears the answer for `offset`:
    /// the record, and whether its placement is carried out (one running or waiting here is
    /// paused or moved after the batch).
    public mutating func readdAsked(
        _ existing: DownloadRecord, request: DownloadRequest, finalFile: FinalFile?, placement: AddPlacement,
        offset: Int? = nil
    ) -> [Action] {
        switch readd(existing, request: request, finalFile: finalFile, startsPaused: placement.startsPaused) {
        case .scheduled:
            return answered(offset, existing, placed: placement.isDefault)
        case .alreadyComplete(let record, let path):
            // Complete: it has no place to take (the move after says so).
            return alreadyComplete(record, path: path) + answered(offset, record, placed: placement.index == nil)
        case .again(let record, let save, let checkName):
            let step = ReaddStep(
                record: record, save: save, index: placement.index, wasPaused: existing.status == .paused,
                offset: offset)
            return checkName ? [.checkName(record, then: step)] : readdNameChecked(step)
        }
    }

    /// A re-add's name is checked (or needed no check): it takes the place that puts it at its
    /// index, decided on the list as it stands without it and taken before any slot can go to
    /// it (`takingPlace`); or it is saved and queued where its record puts it.
    public mutating func readdNameChecked(_ step: ReaddStep) -> [Action] {
        guard let index = step.index else { return readdPlaced(step, as: step.record) }
        var record = step.record
        do {
            let actions = try takingPlace(&record, index: index, excluding: record.id)
            return actions + readdPlaced(step, as: record)
        } catch {
            return [.refuse(error)]
        }
    }

    /// A re-add took its place (`placed`: its record with it): saved when it moved, then queued
    /// or published paused; the batch hears the answer.
    public mutating func readdPlaced(_ step: ReaddStep, as placed: DownloadRecord) -> [Action] {
        let moved = (placed.request.priority, placed.position) != (step.record.request.priority, step.record.position)
        return readdDecided(placed, save: step.save || moved, wasPaused: step.wasPaused)
            + answered(step.offset, placed, placed: true)
    }

    /// A re-add decided `.again` (its name checked and its placement taken): what becomes of its
    /// record. One to be queued whose record changes takes its place now and is saved after
    /// (`.saveReadd`); any other is saved first when it changed, then queued or published paused.
    public mutating func readdDecided(_ record: DownloadRecord, save: Bool, wasPaused: Bool) -> [Action] {
        guard save, record.status == .queued else {
            // Not queued (paused): nothing here changes before the save.
            return (save ? [.saveRecord(record)] : []) + readded(record, wasPaused: wasPaused)
        }
        return readding(record) + [.saveReadd(record)]
    }

    /// A re-add to be queued whose record must be saved first takes its place now, as a new
    /// download does (`adding`): a slot freed during the save waits for it. Then `readdSaved`,
    /// or `saveFailed`.
    public mutating func readding(_ record: DownloadRecord) -> [Action] {
        adding([WaitingQueue.Entry(record)])
    }

    /// That save is done: it is queued, and a slot may go to it.
    public mutating func readdSaved(_ id: DownloadID) -> [Action] {
        [.publish(DownloadEvent(id: id, kind: .queued))] + saved([id])
    }

    /// A re-add's record is saved (when it had to be): it joins the queue, or, paused, is
    /// published paused once.
    public mutating func readded(_ record: DownloadRecord, wasPaused: Bool) -> [Action] {
        guard record.status == .paused else { return queued([WaitingQueue.Entry(record)]) }
        if !isFleet { paused.insert(WaitingQueue.Entry(record)) }
        if wasPaused { return [] }
        return [.publish(DownloadEvent(id: record.id, kind: .paused)), .settle(DownloadOutcome(record))]
    }

    /// Reports a completed download whose file is intact (its groups checked first).
    public mutating func alreadyComplete(_ record: DownloadRecord, path: String) -> [Action] {
        checkGroups(of: record.id) + [
            .publish(DownloadEvent(id: record.id, kind: .alreadyComplete(path: path))),
            .settle(DownloadOutcome(record, alreadyComplete: true)),
        ]
    }
}
