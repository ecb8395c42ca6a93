import HaulCore
import Logging
import NIOConcurrencyHelpers

/// Performs the machine's actions, one at a time, in the run's loop.
extension RunSession {
    // MARK: Actions

    func execute(_ actions: [Action]) async {
        for action in actions where !finished {
            await perform(action)
        }
        // A body the machine did not take is dropped, which closes its connection.
        for connection in bodies.keys where tasks[connection] == nil { bodies[connection] = nil }
        reportConnections()
    }

    /// Tells the host's budget when this download has let connections go.
    func reportConnections() {
        guard let budgets = runner.budgets else { return }
        let count = machine.withLockedValue { $0.connectionCount }
        defer { connectionsReported = count }
        if count < connectionsReported { budgets.using(id, host: host, count: count) }
    }

    func perform(_ action: Action) async {
        switch action {
        case .request(let connection, let plan):
            transfer.requestSent()
            startRequest(connection, plan)
        case .receive(let connection):
            await startBody(connection)
        case .close(let connection):
            bodies[connection] = nil
            if let task = tasks[connection] {
                task.cancel()
            } else {
                // Nothing ran for it (its answer came, its body was never read): dropping the
                // body stopped it.
                post.yield(.closed(connection))
            }
        case .schedule(let timer, let delay):
            timers[timer]?.cancel()
            let (clock, post) = (runner.clock, post)
            timers[timer] = Task {
                do {
                    try await clock.sleep(for: delay)
                    post.yield(.timer(timer))
                } catch {}
            }
        case .cancelTimer(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        case .nameFile(let contentDisposition, let finalURL):
            await nameFile(contentDisposition: contentDisposition, finalURL: finalURL)
        case .persist:
            await persist()
        case .truncate(let length):
            do {
                // A note about the bytes being cut must not outlive them.
                if let notes = runner.notes {
                    let id = id
                    try await io.run { try notes.remove(id) }
                }
                try await openWriter()?.truncate(to: length)
            } catch {
                await execute(machine.withLockedValue { $0.diskFailed(HaulError.from(error, otherwise: .fileSystem)) })
            }
        case .checkpoint(let epoch):
            await checkpoint(epoch: epoch)
        case .backgroundCheckpoint(let epoch):
            await startBackgroundCheckpoint(epoch: epoch)
        case .noteProgress:
            await noteProgress()
        case .verify(let target):
            await startVerify(target)
        case .cancelVerify:
            verifyTask?.cancel()
        case .publish(let target):
            await publish(target)
        case .replaceFinal:
            await publish(.part, replacing: true)
        case .setModificationTime(let seconds):
            await setModificationTime(seconds)
        case .notify(let notice):
            notify(notice)
        case .discardWrites:
            await checkpointTask?.value
            do {
                try await writer?.discard()
            } catch {
                runner.logger.warning(
                    "cannot close the .part given up", metadata: ["id": "\(id)", "error": "\(error)"])
            }
        case .refreshURL:
            let (refresher, record, post) = (runner.refresher, record, post)
            refreshTask = Task {
                let result = await refresher?.refresh(record) ?? .failure(HaulError(.internal, "no refresh command"))
                post.yield(.urlRefreshed(result))
            }
        case .finish(let end):
            finished = true
            announceEnd(end)
        }
    }
}
