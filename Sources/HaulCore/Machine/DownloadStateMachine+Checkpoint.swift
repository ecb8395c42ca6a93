/// When bytes become durable: the periodic checkpoint, asked for by `tick` and run beside the
/// connections (`.backgroundCheckpoint`, one at a time: one that comes due while another runs
/// is asked for when that one ends, never dropped), and what an fsync reports (`synced`). The
/// checkpoints of an end (a stop, a failure, the start of a verification) are `.checkpoint`s,
/// which the runner completes before its next action.
extension DownloadStateMachine {
    /// Periodic: measures connection speeds and says when a checkpoint is due.
    public mutating func tick(now: Double, elapsed: Double) -> [Action] {
        guard isDownloading else { return [] }
        self.now = now
        var bySource: [(source: Int, count: Int64)] = []
        for (id, connection) in connections where connection.phase == .receiving {
            var updated = connection
            let rate = Double(connection.received - connection.bytesAtLastTick) / max(elapsed, 0.001)
            updated.speed = connection.speed.map { $0 * 0.5 + rate * 0.5 } ?? rate
            updated.bytesAtLastTick = connection.received
            connections[id] = updated
            if sources.count > 1, !connection.probing, connection.bytesAtLastTick > 0 {
                bySource.append((connection.source, connection.received - connection.bytesAtLastTick))
            }
        }
        measureSources(bySource, elapsed: elapsed)
        measureNoteThreshold()
        let slow = enforceSpeedLimit(now: now) + leaveSlowSources() + growConnections(now: now)
        let completed = completedLength
        let due =
            now - lastCheckpoint >= settings.checkpointInterval
            || completed - completedAtLastCheckpoint >= settings.checkpointBytes
        guard due, parts.contains(where: { $0.appended > $0.durable }) else {
            // A tick notes a quarter of `noteBytes` or more since the last checkpoint: less is
            // refetched in a moment after a kill, and a small file is never noted (each note of
            // one was a file made and removed in the state directory: 2,000 files of 16 KiB
            // noted 1,018 times).
            guard settings.notesProgress, completed != completedAtLastNote,
                completed - completedAtLastCheckpoint >= settings.noteBytes / 4
            else { return slow }
            completedAtLastNote = completed
            bytesSinceNote = 0
            return slow + [.noteProgress]
        }
        guard backgroundCheckpoint == .none else {
            backgroundCheckpoint = .runningAndDueAgain
            return slow
        }
        return slow + startBackgroundCheckpoint()
    }

    mutating func startBackgroundCheckpoint() -> [Action] {
        lastCheckpoint = now
        completedAtLastCheckpoint = completedLength
        backgroundCheckpoint = .running
        return [.backgroundCheckpoint(epoch: epoch)]
    }

    /// The result of `.backgroundCheckpoint`: what its fsync made durable, or why it failed.
    /// One that came due meanwhile is asked for now (if there is still something to sync).
    public mutating func backgroundCheckpointEnded(epoch syncedEpoch: Int, _ result: Result<[Int64: Int64], HaulError>)
        -> [Action]
    {
        guard backgroundCheckpoint != .none else { return unexpected("end of a background checkpoint") }
        let again = backgroundCheckpoint == .runningAndDueAgain
        backgroundCheckpoint = .none
        switch result {
        case .failure(let error):
            return diskFailed(error)
        case .success(let written):
            let actions = synced(epoch: syncedEpoch, written: written)
            guard again, isDownloading, parts.contains(where: { $0.appended > $0.durable }) else { return actions }
            return actions + startBackgroundCheckpoint()
        }
    }

    /// A checkpoint's fsync returned: `written` maps each part's start (remote offset) to the
    /// file offset after the last byte the writer had put in the file for it before the fsync.
    public mutating func synced(epoch syncedEpoch: Int, written: [Int64: Int64]) -> [Action] {
        guard syncedEpoch == epoch else { return [] }
        var changed = false
        for index in parts.indices {
            guard let end = written[parts[index].start] else { continue }
            let durable = min(parts[index].appended, max(0, end - (parts[index].start - fileBase)))
            if durable > parts[index].durable {
                parts[index].durable = durable
                changed = true
            }
        }
        // Parts whose owners let go since the last checkpoint may merge now too.
        let count = parts.count
        mergeFinishedParts()
        return changed || parts.count != count ? [.persist] : []
    }
}
