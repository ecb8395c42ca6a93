import HaulCore
import NIOConcurrencyHelpers

/// The latest progress of each running download. The store holds only checkpoints (about one a
/// second, and never ahead of the disk); listings and the daemon's summary want the live figures
/// and the speed, which only the runners' events carry.
final class LiveProgress: Sendable {
    private let state = NIOLockedValueBox([DownloadID: Progress]())

    func note(_ event: DownloadEvent) {
        switch event.kind {
        case .progress(let progress):
            state.withLockedValue { $0[event.id] = progress }
        case _ where event.isFinal:
            _ = state.withLockedValue { $0.removeValue(forKey: event.id) }
        default:
            break
        }
    }

    func progress(_ id: DownloadID) -> Progress? {
        state.withLockedValue { $0[id] }
    }

    func all() -> [DownloadID: Progress] {
        state.withLockedValue { $0 }
    }
}
