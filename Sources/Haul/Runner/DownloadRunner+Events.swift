import HaulCore
import Logging
import NIOConcurrencyHelpers

/// What the user hears: the machine's notices and the run's end as `DownloadEvent`s and log lines.
extension RunSession {
    func notify(_ notice: DownloadStateMachine.Notice) {
        switch notice {
        case .started(let offset):
            // The meter's first sample: the first tick has a rate, not the 0 of a lone sample.
            speed.record(bytes: offset, at: runner.clock.seconds())
            runner.emit(DownloadEvent(id: id, kind: .started(offset: offset)))
        case .retrying(let attempt, let delay, let error):
            runner.logger.info(
                "retrying",
                metadata: ["id": "\(id)", "attempt": "\(attempt)", "delay": "\(delay)", "after": "\(error)"])
            runner.emit(DownloadEvent(id: id, kind: .retrying(attempt: attempt, delay: delay, error: error)))
        case .restarted(let reason, let cause):
            runner.logger.notice(
                "starting over", metadata: ["id": "\(id)", "reason": "\(reason)", "cause": "\(cause.rawValue)"])
            runner.emit(DownloadEvent(id: id, kind: .restarted(reason: reason, cause: cause)))
        case .connectionRefused(let connection, let error, let retryIn):
            // The host's budget, over every download to it, goes down for a while too.
            runner.budgets?.refused(host: host, seconds: max(retryIn.seconds, Self.refusalMemory))
            runner.logger.info(
                "server refused a connection",
                metadata: [
                    "id": "\(id)", "connection": "\(connection)", "error": "\(error)", "next try in": "\(retryIn)",
                ])
        case .connectionsGrown(let count):
            runner.logger.info(
                "more connections: the last ones raised the speed",
                metadata: ["id": "\(id)", "connections": "\(count)"])
        case .connectionsSettled(let count):
            runner.logger.info("connections settled", metadata: ["id": "\(id)", "connections": "\(count)"])
        case .validatorDistrusted(let reason):
            runner.logger.info("validator", metadata: ["id": "\(id)", "reason": "\(reason)"])
        case .sourceDropped(let url, let reason):
            runner.logger.warning("source dropped", metadata: ["id": "\(id)", "url": "\(url)", "reason": "\(reason)"])
        case .piecesRefetched(let reason):
            runner.logger.warning("fetching pieces again", metadata: ["id": "\(id)", "reason": "\(reason)"])
        case .urlExpiring(let error):
            runner.logger.warning(
                "URL expired; running the refresh command", metadata: ["id": "\(id)", "error": "\(error.message)"])
        case .urlRefreshed(let url):
            // A signed URL's query is a credential: only where it leads is logged.
            runner.logger.warning(
                "continuing from a refreshed URL", metadata: ["id": "\(id)", "host": "\(url.scheme)://\(url.host)"])
        case .transferEnded(let finishBytes):
            runner.transferEnded(finishBytes)
        case .notModified:
            notModified = true
            runner.logger.info("not modified on the server", metadata: ["id": "\(id)"])
        case .saveFailed(let error):
            // The next checkpoint saves again (an end's save that fails is the machine's to judge).
            runner.logger.warning("cannot save the checkpoint", metadata: ["id": "\(id)", "error": "\(error)"])
        case .sourceSetAside(let url, let error, let retryIn):
            runner.logger.info(
                "source set aside",
                metadata: ["id": "\(id)", "url": "\(url)", "error": "\(error)", "next try in": "\(retryIn)"])
        }
    }

    /// The run's last event, as the machine's `.finish` says.
    func announceEnd(_ end: DownloadStateMachine.End) {
        let (record, completed, total) = machine.withLockedValue { ($0.record, $0.completedLength, $0.expectedLength) }
        let kind: DownloadEvent.Kind
        switch end {
        case .completed, .notModified:
            runner.emit(
                DownloadEvent(
                    id: id,
                    kind: .progress(
                        Progress(
                            completed: completed, total: total, bytesPerSecond: speed.bytesPerSecond, connections: 0))))
            let path = DestinationFiles.finalPath(record) ?? ""
            kind = end == .notModified ? .alreadyComplete(path: path) : .completed(path: path)
        case .failed(let error):
            kind = .failed(error)
        case .paused:
            kind = .paused
        case .removed:
            kind = .removed
        case .interrupted:
            kind = .interrupted
        }
        runner.emit(DownloadEvent(id: id, kind: kind))
    }

    /// How long a host's lowered budget lasts at least after a refusal.
    static let refusalMemory = 60.0
}
