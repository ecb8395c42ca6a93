/// Progress noted between checkpoints without fsync (`.noteProgress`), and taken back after a
/// kill on the same boot (`LocalFiles.noted`): see `ProgressNotes` in the engine.
extension DownloadStateMachine {
    /// Whether `keep` more bytes make a note due now (see `Accepted.noteDue`); once per burst.
    mutating func noteDue(after keep: Int64) -> Bool {
        guard settings.notesProgress else { return false }
        bytesSinceNote += keep
        guard bytesSinceNote >= max(noteThreshold, settings.noteBytes) else { return false }
        bytesSinceNote = 0
        return true
    }

    /// Measured at each tick from the connections' speeds: a slow download notes every
    /// `settings.noteBytes` (a server's burst at the start of each request is noted as it
    /// arrives, not a tick later), a fast one about twenty times a second at most (a note
    /// flushes the writer and rewrites a small file).
    mutating func measureNoteThreshold() {
        let speed = connections.values.reduce(0) { $0 + ($1.speed ?? 0) }
        noteThreshold = max(settings.noteBytes, Int64(min(speed / 20, Double(Int64.max / 2))))
    }

    /// A body task handed over the chunk that made a note due (`Accepted.noteDue`).
    public mutating func noteRequested() -> [Action] {
        guard settings.notesProgress, isDownloading, completedLength != completedAtLastNote else { return [] }
        completedAtLastNote = completedLength
        return [.noteProgress]
    }

    /// Bytes a killed run noted (and the runner synced since) count as durable, within each
    /// part and within the `.part` file.
    mutating func takeNoted(_ local: LocalFiles) {
        guard let size = local.partSize, !local.noted.isEmpty else { return }
        for index in parts.indices {
            guard let end = local.noted[parts[index].start] else { continue }
            let length = parts[index].end.map { $0 - parts[index].start + 1 } ?? .max
            let noted = min(length, max(0, min(end, size) - (parts[index].start - fileBase)))
            if noted > parts[index].durable {
                parts[index].durable = noted
                parts[index].appended = noted
            }
        }
    }
}
