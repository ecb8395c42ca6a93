import HaulCore
import NIOConcurrencyHelpers

/// Asks a running download to stop, from outside its task: a message, not a cancellation
/// (DESIGN rule 3). The status is what the record says afterwards: paused (a pause), running
/// (a shutdown: the next start resumes it) or removed. The first request wins, except that a
/// remove overrides a pause or shutdown still in progress (it may interrupt a verification).
final class StopSignal: Sendable {
    private struct State {
        var status: DownloadStatus?
        var deliver: (@Sendable (DownloadStatus) -> Void)?
        var deliverRate: (@Sendable (Int64?) -> Void)?
        var deliverHeaders: (@Sendable (HTTPHeaderList) -> Void)?
        var lost = false
        var deliverLost: (@Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    var requested: DownloadStatus? { state.withLockedValue { $0.status } }

    func request(_ status: DownloadStatus) {
        let deliver: (@Sendable (DownloadStatus) -> Void)? = state.withLockedValue { state in
            guard state.status == nil || (status == .removed && state.status != .removed) else { return nil }
            state.status = status
            return state.deliver
        }
        deliver?(status)
    }

    /// A new rate limit for the download (the live limiter already has it): the runner's
    /// record must carry it too, or its next checkpoint would store the old one.
    func changeRate(_ rate: Int64?) {
        state.withLockedValue { $0.deliverRate }?(rate)
    }

    /// New request fields for the download (`DownloadManager.setReferer`): its next requests
    /// carry them, and the runner's record too, or its next checkpoint would store the old ones.
    func changeHeaders(_ headers: HTTPHeaderList) {
        state.withLockedValue { $0.deliverHeaders }?(headers)
    }

    func attachHeaders(_ deliver: @escaping @Sendable (HTTPHeaderList) -> Void) {
        state.withLockedValue { $0.deliverHeaders = deliver }
    }

    /// Another host holds the download now (a fleet's renewal said so): stop writing at once,
    /// without a checkpoint.
    func leaseLost() {
        let deliver: (@Sendable () -> Void)? = state.withLockedValue { state in
            state.lost = true
            return state.deliverLost
        }
        deliver?()
    }

    func attachLeaseLost(_ deliver: @escaping @Sendable () -> Void) {
        let pending = state.withLockedValue { state in
            state.deliverLost = deliver
            return state.lost
        }
        if pending { deliver() }
    }

    func attachRate(_ deliver: @escaping @Sendable (Int64?) -> Void) {
        state.withLockedValue { $0.deliverRate = deliver }
    }

    /// Where the runner wants the message; a request made before it attached is delivered now.
    func attach(_ deliver: @escaping @Sendable (DownloadStatus) -> Void) {
        let pending: DownloadStatus? = state.withLockedValue { state in
            state.deliver = deliver
            return state.status
        }
        if let pending { deliver(pending) }
    }
}
