import HaulCore
import NIOConcurrencyHelpers

/// What this process knows of its running downloads before any store read: the latest progress
/// of each (the store holds only checkpoints, about one a second, never ahead of the disk;
/// listings and the daemon's summary want the live figures and the speed, which only the
/// runners' events carry), and the record each run last stored. A running download's record is
/// written by its run alone (its lock keeps every other process off it), so that copy is the
/// store's row without a query and a decode: `tellActive` with 200 running read 200 rows a call.
final class LiveProgress: Sendable {
    private struct State {
        var progress: [DownloadID: Progress] = [:]
        var records: [DownloadID: DownloadRecord] = [:]
        /// The speed a run had when a pause or a shutdown stopped it: the download's next run
        /// shows it until it has a rate of its own (its meter has none before its second tick).
        var lastSpeeds: [DownloadID: Double] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func note(_ event: DownloadEvent) {
        state.withLockedValue { state in
            switch event.kind {
            case .progress(var progress):
                if progress.bytesPerSecond > 0 {
                    state.lastSpeeds[event.id] = nil
                } else if let last = state.lastSpeeds[event.id] {
                    progress.bytesPerSecond = last
                }
                state.progress[event.id] = progress
            case .paused, .interrupted:
                // Resumed later: its speed until the next run has its own.
                let last = state.progress.removeValue(forKey: event.id)?.bytesPerSecond ?? 0
                state.lastSpeeds[event.id] = last > 0 ? last : state.lastSpeeds[event.id]
            case _ where event.isFinal:
                state.progress[event.id] = nil
                state.lastSpeeds[event.id] = nil
            default:
                break
            }
        }
    }

    /// A run stored `record`: its copy answers reads of the running download.
    func saved(_ record: DownloadRecord) {
        state.withLockedValue { $0.records[record.id] = record }
    }

    /// A run is about to store `record`. A run that stores `running` and has no figures yet
    /// (before its first tick) shows the speed its download had when it last stopped, if any,
    /// from before the store says it runs: a download counted as running has the speed it is
    /// known to run at, not 0 (seeded after the save, a summary read between the two said 0).
    func saving(_ record: DownloadRecord) {
        state.withLockedValue { state in
            if record.status == .running, state.progress[record.id] == nil, let last = state.lastSpeeds[record.id] {
                state.progress[record.id] = Progress(
                    completed: record.completedLength, total: record.expectedLength, bytesPerSecond: last,
                    connections: 0)
            }
        }
    }

    /// A change made to a running download's record outside its run (a new rate limit), stored.
    func update(_ id: DownloadID, _ change: (inout DownloadRecord) -> Void) {
        state.withLockedValue { state in
            if state.records[id] != nil { change(&state.records[id]!) }
        }
    }

    /// The run ended: its record is the store's to tell, and it has no live figures (also when
    /// it ended without a last event: a refused start after its first save).
    func ended(_ id: DownloadID) {
        state.withLockedValue { state in
            state.records[id] = nil
            state.progress[id] = nil
        }
    }

    func progress(_ id: DownloadID) -> Progress? {
        state.withLockedValue { $0.progress[id] }
    }

    func all() -> [DownloadID: Progress] {
        state.withLockedValue { $0.progress }
    }

    /// The record a running download's run last stored.
    func record(_ id: DownloadID) -> DownloadRecord? {
        state.withLockedValue { $0.records[id] }
    }

    /// These records in the order of `ids`: a running download's as its run last stored it (fresher
    /// than the store's checkpoint), the others read at once through `stored`; ids found nowhere
    /// (removed meanwhile) are skipped.
    func records(
        _ ids: [DownloadID], stored: @Sendable ([DownloadID]) async throws -> [DownloadRecord]
    ) async throws -> [DownloadRecord] {
        var found = state.withLockedValue { state in ids.reduce(into: [:]) { $0[$1] = state.records[$1] } }
        let others = ids.filter { found[$0] == nil }
        for record in try await others.isEmpty ? [] : stored(others) where found[record.id] == nil {
            found[record.id] = record
        }
        return ids.compactMap { found[$0] }
    }
}
