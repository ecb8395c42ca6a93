import HaulCore
import Logging
import NIOConcurrencyHelpers

/// What the run's loop does with each input (a connection task's report, a timer, a tick, a stop):
/// it asks the machine, under its lock, and gets the actions to perform.
extension RunSession {
    // MARK: Inputs

    /// Synchronous: it never waits (the machine answers under its lock).
    func handle(_ input: RunInput) -> [Action] {
        let jitter = self.jitter
        switch input {
        case .response(let connection, let head, let body):
            tasks[connection] = nil
            bodies[connection] = body
            transfer.answered(over: head.connections)
            let now = runner.clock.secondsSince1970()
            return machine.withLockedValue {
                $0.responseReceived(connection, head, nowSecondsSince1970: now, jitter: jitter)
            }
        case .requestFailed(let connection, let error), .bodyFailed(let connection, let error):
            tasks[connection] = nil
            if error.code != .interrupted {
                runner.logger.debug(
                    "connection failed", metadata: ["id": "\(id)", "connection": "\(connection)", "error": "\(error)"])
            }
            return machine.withLockedValue { $0.transferFailed(connection, error, jitter: jitter) }
        case .bodyEnded(let connection):
            tasks[connection] = nil
            return machine.withLockedValue { $0.bodyEnded(connection, jitter: jitter) }
        case .closed(let connection):
            return machine.withLockedValue { $0.connectionClosed(connection) }
        case .overlapMismatch(let connection):
            tasks[connection] = nil
            return machine.withLockedValue { $0.overlapMismatch(connection) }
        case .diskFailed(let connection, let error):
            tasks[connection] = nil
            runner.logger.error("cannot write the .part file", metadata: ["id": "\(id)", "error": "\(error)"])
            return machine.withLockedValue { $0.diskFailed(error, connection: connection) }
        case .timer(let timer):
            timers[timer] = nil
            return machine.withLockedValue { $0.timerFired(timer) }
        case .tick:
            let now = runner.clock.seconds()
            let elapsed = now - lastTick
            lastTick = now
            let (actions, completed, total, connections, downloading) = machine.withLockedValue { machine in
                (
                    machine.tick(now: now, elapsed: elapsed), machine.completedLength, machine.expectedLength,
                    machine.activeConnections, machine.isDownloading
                )
            }
            guard downloading else { return actions }
            speed.record(bytes: completed, at: now)
            runner.emit(
                DownloadEvent(
                    id: id,
                    kind: .progress(
                        Progress(
                            completed: completed, total: total, bytesPerSecond: speed.bytesPerSecond,
                            connections: connections))))
            return actions
        case .noteDue:
            return machine.withLockedValue { $0.noteRequested() }
        case .synced(let epoch, let result):
            checkpointTask = nil
            if case .failure(let error) = result {
                runner.logger.error("checkpoint failed", metadata: ["id": "\(id)", "error": "\(error)"])
            }
            return machine.withLockedValue { $0.backgroundCheckpointEnded(epoch: epoch, result) }
        case .stop(let status):
            return machine.withLockedValue { $0.stopRequested(status: status) }
        case .leaseLost:
            return machine.withLockedValue { $0.leaseLost() }
        case .rateChanged(let rate):
            return machine.withLockedValue { $0.setRateLimit(rate) }
        case .headersChanged(let headers):
            return machine.withLockedValue { $0.setHeaders(headers) }
        case .allowance(let allowance):
            return machine.withLockedValue { $0.setAllowance(allowance) }
        case .verified(let verdict):
            verifyTask = nil
            return machine.withLockedValue { $0.verified(verdict.error, badPieces: verdict.badPieces) }
        case .urlRefreshed(let result):
            refreshTask = nil
            return machine.withLockedValue { $0.urlRefreshed(result) }
        }
    }
}
