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
    }

    private let state = NIOLockedValueBox(State())

    func note(_ event: DownloadEvent) {
        switch event.kind {
        case .progress(let progress):
            state.withLockedValue { $0.progress[event.id] = progress }
        case _ where event.isFinal:
            _ = state.withLockedValue { $0.progress.removeValue(forKey: event.id) }
        default:
            break
        }
    }

    /// A run stored `record`.
    func saved(_ record: DownloadRecord) {
        state.withLockedValue { $0.records[record.id] = record }
    }

    /// A change made to a running download's record outside its run (a new rate limit), stored.
    func update(_ id: DownloadID, _ change: (inout DownloadRecord) -> Void) {
        state.withLockedValue { state in
            if state.records[id] != nil { change(&state.records[id]!) }
        }
    }

    /// The run ended: its record is the store's to tell.
    func ended(_ id: DownloadID) {
        _ = state.withLockedValue { $0.records.removeValue(forKey: id) }
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
}
