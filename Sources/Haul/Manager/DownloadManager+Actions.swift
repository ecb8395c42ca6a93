import HaulCore
import Logging

/// The manager carries out the queue's actions (`DownloadQueue.Action`), in the order given:
/// it decides nothing here. A start is made before anything awaits, so a slot the queue gives is
/// taken in the same step as the event that freed it.
extension DownloadManager {
    /// What a caller's change leaves for after its turn: the runs it asked to stop (the caller
    /// returns once they have), and the actions that wait for them or for another host
    /// (`.removeHere`, `.removeThroughHost`, `.awaitRemote`, `.pauseAllEverywhere`), carried out
    /// by `finish` in order.
    struct CallerWork {
        var stopping: [Completion] = []
        var later: [DownloadQueue.Action] = []
        /// A batch of adds: where each request's download's id goes once decided (`.follow`).
        var following: [FollowedIDs?] = []
        /// A batch of adds: its names' disk and store state, read once (`.readNames`).
        var facts = FileNameClaims.Facts()
        /// A batch of adds: its answer (`.answerAdds`), one record per request and the offsets
        /// placed after it.
        var added: AddedBatch = ([], [])

        /// The caller returns once this run (if any) has returned.
        mutating func wait(for run: RunHandle?) {
            if let run { stopping.append(run.ended) }
        }
    }

    func perform(_ actions: [DownloadQueue.Action]) async {
        var work = CallerWork()
        for action in actions {
            do {
                try await perform(action, for: &work)
            } catch {
                // Only a caller's steps throw (a save of paused downloads, the restore's read, a
                // refusal), and those are asked for through `performCalling`.
                configuration.logger.error(
                    "cannot carry out a queue action", metadata: ["action": "\(action)", "error": "\(error)"])
            }
        }
    }

    /// The same, for a caller's change in its turn: the first failure (or `.refuse`) is the
    /// caller's answer, after the actions before it were carried out. Returns what is left for
    /// after the turn (`finish`).
    func performCalling(_ actions: [DownloadQueue.Action]) async throws -> CallerWork {
        var work = CallerWork()
        for action in actions { try await perform(action, for: &work) }
        return work
    }

    /// After a caller's turn: waits for the runs it stopped, then carries out what was left for
    /// later, in order; the first failure is the caller's answer. Returns how many downloads a
    /// fleet's pause of everything paused (0 for any other work).
    @discardableResult
    func finish(_ work: CallerWork) async throws -> Int {
        var pausedEverywhere = 0
        for run in work.stopping { await run.wait() }
        for action in work.later {
            switch action {
            case .removeHere(let id, let deleteFile, let runnerStopped):
                // A run started again meanwhile is stopped, and waited for outside the loop.
                var stoppedAgain = false
                while case let runs = try await inTurn({ [self, stoppedAgain] in
                    try await removeNow(
                        id, deleteFile: deleteFile, runnerStopped: runnerStopped, stoppedAgain: stoppedAgain)
                }), !runs.isEmpty {
                    for run in runs { await run.wait() }
                    stoppedAgain = true
                }
            case .removeThroughHost(let id, let command):
                let record = try await fleetRequest(command, for: id)
                await names.release(directory: record.request.directory, name: record.fileName)
            case .awaitRemote(let id, let command):
                _ = try await fleetAwait(command, of: id)
            case .pauseAllEverywhere:
                pausedEverywhere += try await pauseEverywhere()
            case .moveAfterPause(let id, let index):
                try await finish(
                    try await inTurn { [self] in
                        try await performCalling(queue.moving(existing(id), toIndex: index, afterAdd: true))
                    })
            case .forgetAfterRun(let id):
                try await finish(
                    try await inTurn { [self] in try await performCalling(queue.forgetting(existingOrRemoved(id))) })
            default:
                throw HaulError(.internal, "\(action) is not carried out after a turn")
            }
        }
        return pausedEverywhere
    }

    /// Writes `group`'s finish on a file thread; the queue hears how it went.
    private func writeFinish(_ group: DownloadGroup) async -> [DownloadQueue.Action] {
        do {
            try await BlockingIO.run { try group.finish?.write(into: group.directory) }
            configuration.logger.info("finished a name of content", metadata: ["name": "\(group.name)"])
            return queue.finishWritten(group)
        } catch {
            // Kept failed: the next completion of a member, or the next start, tries again.
            configuration.logger.error(
                "cannot write what completes a name of content",
                metadata: ["name": "\(group.name)", "directory": "\(group.directory)", "error": "\(error)"])
            return queue.finishFailed(group, HaulError.from(error, otherwise: .fileSystem))
        }
    }

    func perform(_ action: DownloadQueue.Action, for work: inout CallerWork) async throws {
        switch action {
        case .startRun(let id, let generation, let place, let given, let copy, let probe):
            start(id, generation: generation, place: place, given: given, copy: copy, probe: probe)
        case .grantSlot(let id):
            handles[id]?.gate?.open()
        case .stopRun(let id, let status):
            handles[id]?.stop.request(status)
            work.wait(for: handles[id])
        case .awaitRun(let id):
            work.wait(for: handles[id])
        case .saveReadd(let record):
            // The save's answer goes back to the queue: saved, it may take a slot; failed, it leaves.
            do {
                try await store.save(record)
            } catch {
                await perform(queue.saveFailed([record.id]))
                throw error
            }
            for action in queue.readdSaved(record.id) { try await perform(action, for: &work) }
        case .dropRun(let id):
            handles[id] = nil
            live.ended(id)
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
            var paused = try await store.records(ids)
            for index in paused.indices { paused[index].status = .paused }
            try await store.save(paused)
            for action in queue.pausedSaved(paused) { try await perform(action, for: &work) }
        case .checkName(let record, let step):
            try await names.checkExplicit(record)
            for action in queue.readdNameChecked(step) { try await perform(action, for: &work) }
        case .lookUpAdds(let requests):
            for action in queue.addsLookedUp(try await store.records(matching: requests)) {
                try await perform(action, for: &work)
            }
        case .readNames(let requests):
            work.facts = try await names.facts(for: Array(requests.values))
            for action in queue.namesRead(try await holders(of: requests, facts: work.facts)) {
                try await perform(action, for: &work)
            }
        case .follow(let offset, let id):
            work.following[offset]?.insert(id)
        case .makeNew(let request, let status, let offset):
            var record = DownloadRecord(id: .random(), request: request, createdAt: clock.secondsSince1970())
            try await names.checkExplicit(record, facts: work.facts)
            record.status = status
            for action in queue.newMade(record, offset: offset, now: clock.microsecondsSince1970()) {
                try await perform(action, for: &work)
            }
        case .saveAdds:
            for action in queue.addsCarriedOut() { try await perform(action, for: &work) }
        case .saveNew(let records):
            // Each is in the list already; a message read after this save waits for them.
            try await store.save(records)
            for action in queue.addsSaved() { try await perform(action, for: &work) }
        case .readGroups:
            for action in queue.groupsRead(try await store.unfinishedGroups()) { try await perform(action, for: &work) }
        case .readGroupsOf(let id):
            for action in queue.memberGroupsRead(try await store.groups(containing: id)) {
                try await perform(action, for: &work)
            }
        case .readMembers(let group):
            for action in queue.membersRead(group, try await store.records(group.members)) {
                try await perform(action, for: &work)
            }
        case .writeFinish(let group):
            for action in await writeFinish(group) { try await perform(action, for: &work) }
        case .saveGroup(let group):
            try await store.saveGroup(group)
        case .deleteGroup(let id):
            try await store.deleteGroup(id)
        case .answerAdds(let records, let placedAfter):
            work.added = (records, placedAfter)
        case .deleteFiles(let record, let final):
            await removeFiles(of: record, final: final)
        case .applyRate(let id, let rate):
            handles[id]?.limiter.setRate(rate.flatMap(ByteRate.limit))
            handles[id]?.stop.changeRate(rate)
            live.update(id) { $0.request.maxBytesPerSecond = rate }
        case .storePlaces(let entries, let restore):
            try await storePlaces(entries, restore: restore)
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
        case .releaseLease, .claim, .wakeClaims, .startClaiming, .renewLeases:
            // Only the fleet's backend sends these: dispatched here once, to its store.
            await perform(action, on: try sharedStore())
        case .removeForAnotherHost(let id, let deleteFile):
            // No caller waits for it: a child of the manager's task group, logged if it fails.
            spawn { await self.removeForAnotherHost(id, deleteFile: deleteFile) }
        case .restoreQueued:
            // The paused ones' places alone: their records are read when they are resumed.
            let records = try await store.records(status: .queued) + store.records(status: .running)
            for action in queue.restored(records, paused: try await store.places(status: .paused)) {
                try await perform(action, for: &work)
            }
        case .refuse(let error):
            throw error
        case .saveRecord(let record):
            try await store.save(record)
        case .deleteRecords(let ids):
            for id in ids { try await store.delete(id) }
        case .readd(let record, let request, let placement, let offset):
            let finalFile = try await DestinationFiles.completedFile(record)
            let actions = queue.readdAsked(
                record, request: request, finalFile: finalFile, placement: placement, offset: offset)
            for action in actions { try await perform(action, for: &work) }
        case .requeue(let records):
            try await requeue(records)
        case .pauseEverywhere(let ids):
            // One statement decides for all of them, wherever they run (`fleetPaused`).
            for action in queue.fleetPaused(try await sharedStore().pause(ids)) {
                try await perform(action, for: &work)
            }
        case .pauseAllEverywhere, .awaitRemote, .removeThroughHost, .removeHere, .forgetAfterRun, .moveAfterPause:
            // They wait for runs or other hosts: after the caller's turn (`finish`).
            work.later.append(action)
        case .remoteAnswered, .remoteRefused:
            // Answers to a caller's wait, read by that caller (`fleetAwait`): never sent here.
            break
        }
    }
}
