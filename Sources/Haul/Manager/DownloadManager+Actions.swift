import HaulCore
import Logging

/// The manager carries out the queue's actions (`DownloadQueue.Action`), in the order given:
/// it decides nothing here. A start is made before anything awaits, so a slot the queue gives is
/// taken in the same step as the event that freed it.
extension DownloadManager {
    func perform(_ actions: [DownloadQueue.Action]) async {
        for action in actions {
            do {
                try await perform(action)
            } catch {
                // Only a save of paused downloads and the restore's read throw, and both are
                // asked for through `performSaving`.
                configuration.logger.error(
                    "cannot carry out a queue action", metadata: ["action": "\(action)", "error": "\(error)"])
            }
        }
    }

    /// The same, for the steps that save (a pause) or read (a restore): the first failure is the caller's answer,
    /// after the actions before it were carried out.
    func performSaving(_ actions: [DownloadQueue.Action]) async throws {
        for action in actions { try await perform(action) }
    }

    private func perform(_ action: DownloadQueue.Action) async throws {
        switch action {
        case .startRun(let id, let generation, let place, let given, let copy):
            start(id, generation: generation, place: place, given: given, copy: copy)
        case .stopRun(let id, let status):
            handles[id]?.stop.request(status)
        case .abandonRun(let id):
            configuration.logger.notice("another host took the download over", metadata: ["id": "\(id)"])
            handles[id]?.stop.leaseLost()
        case .publish(let event):
            hub.publish(event)
        case .settle(let outcome):
            outcomeHub.publish(outcome)
        case .releaseName(let directory, let name):
            await names.release(directory: directory, name: name)
        case .savePaused(let ids):
            try await savePaused(ids)
        case .storeFailed(let record):
            configuration.logger.error(
                "download cannot be run", metadata: ["id": "\(record.id)", "error": "\(record.error?.message ?? "")"])
            do {
                try await store.save(record)
            } catch {
                // Its lease is released next: a later claim reads it again.
                configuration.logger.error(
                    "cannot store the failure", metadata: ["id": "\(record.id)", "error": "\(error)"])
            }
        case .releaseLease(let id):
            await releaseLease(id)
        case .claim(let limit, let excluding):
            await claim(limit: limit, excluding: excluding)
        case .wakeClaims:
            wakeFleet()
        case .removeForAnotherHost(let id, let deleteFile):
            // No caller waits for it: a child of the manager's task group, logged if it fails.
            spawn { await self.removeForAnotherHost(id, deleteFile: deleteFile) }
        case .restoreQueued:
            await enqueue(try await store.records(status: nil).filter(\.status.resumesAfterRestart))
        case .startClaiming:
            startFleet()
        case .renewLeases:
            await renewLeases()
        case .remoteAnswered, .remoteRefused:
            // Answers to a caller's wait, read by that caller (`fleetAwait`): never sent here.
            break
        }
    }

    /// Waiting downloads the queue took out of its list: saved paused, then published and settled.
    private func savePaused(_ ids: [DownloadID]) async throws {
        var paused = try await store.records(ids)
        for index in paused.indices { paused[index].status = .paused }
        try await store.save(paused)
        for record in paused {
            hub.publish(DownloadEvent(id: record.id, kind: .paused))
            outcomeHub.publish(DownloadOutcome(record))
        }
    }
}
