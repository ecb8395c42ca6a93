import HaulCore
import Logging

/// What a manager that is one host of a fleet keeps beside its runs: only the loop's plumbing.
/// When to renew, how long an outage lasts and how long another host may take are the queue's
/// (`FleetBackend`).
struct FleetState {
    /// Wakes the loop; finished to end it.
    var wake: AsyncStream<Void>.Continuation?
}

/// One host of a fleet (a `SharedQueueStore`): instead of a queue in memory, the manager claims
/// downloads from the database with leases whenever it has a free slot, renews the leases
/// about once a second (carrying live progress), applies the pauses and removes other hosts
/// ask for, and stops what it runs, without writing, when a lease turns out to be another
/// host's. A host that cannot reach the database for half a lease stops its downloads at a
/// checkpoint, keeps their leases, and starts them again once a renewal succeeds.
extension DownloadManager {
    /// This host's name in the fleet; nil when the manager is not part of one.
    public nonisolated var fleetHost: String? { fleet?.host }

    /// Where downloads held by live leases run, with their progress as last renewed.
    public func fleetRuns(_ ids: [DownloadID]) async -> [DownloadID: FleetRun] {
        do {
            return try await fleet?.runs(ids) ?? [:]
        } catch {
            // Only the live progress of other hosts' runs is missing: the records are still answered.
            configuration.logger.warning("cannot read the fleet's live runs", metadata: ["error": "\(error)"])
            return [:]
        }
    }

    /// Carries out an action only a fleet's backend sends, on the fleet's store.
    func perform(_ action: DownloadQueue.Action, on fleet: any SharedQueueStore) async {
        switch action {
        case .releaseLease(let id): await releaseLease(id, on: fleet)
        case .claim(let limit, let excluding): await claim(limit: limit, excluding: excluding, from: fleet)
        case .wakeClaims: wakeFleet()
        case .startClaiming(let interval): startFleet(fleet, every: interval)
        case .renewLeases: await renewLeases(on: fleet)
        default: configuration.logger.error("not a fleet's action", metadata: ["action": "\(action)"])
        }
    }

    /// Starts the host's loop (`.startClaiming`, which the queue sends once), waking every
    /// `interval`.
    private func startFleet(_ fleet: any SharedQueueStore, every interval: Duration) {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        fleetState.wake = wake
        spawn { await self.fleetLoop(fleet, wakes: wakes, wake: wake, interval: interval) }
    }

    /// The loop, a child of the manager's task group: it renews and claims at each wake (a
    /// tick of `interval`, a notice of another host's command, a freed slot) until `stopFleet`
    /// ends its wakes; the ticker and the notices' listener end with it.
    private nonisolated func fleetLoop(
        _ fleet: any SharedQueueStore, wakes: AsyncStream<Void>,
        wake: AsyncStream<Void>.Continuation, interval: Duration
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in fleet.commandNotices { await self.commandNoticed() }
            }
            group.addTask { [clock] in
                while !Task.isCancelled {
                    wake.yield()
                    do {
                        try await clock.sleep(for: interval)
                    } catch {
                        return // cancelled: the loop stopped
                    }
                }
            }
            for await _ in wakes { await self.fleetTick() }
            group.cancelAll()
        }
    }

    func stopFleet() {
        fleetState.wake?.finish()
    }

    /// Another host left a command for this one: the loop renews at once, which hears it.
    func commandNoticed() async {
        await perform(queue.commandNoticed())
    }

    /// Asks the loop for a claim soon (a download was added or a slot freed).
    func wakeFleet() {
        fleetState.wake?.yield()
    }

    /// One turn of the loop: the queue says whether to renew or to claim (`DownloadQueue.tick`).
    func fleetTick() async {
        await perform(queue.tick(now: clock.seconds()))
    }

    /// Claims downloads for free slots; the queue starts them.
    private func claim(limit: Int, excluding: Set<DownloadID>, from fleet: any SharedQueueStore) async {
        do {
            let claimed = try await fleet.claim(limit: limit, excluding: Array(excluding))
            await perform(queue.claimed(claimed, limit: limit))
        } catch {
            configuration.logger.warning("cannot claim downloads", metadata: ["error": "\(error)"])
        }
    }

    /// Renews every lease held here, and tells the queue what the database answered, or that it
    /// did not.
    private func renewLeases(on fleet: any SharedQueueStore) async {
        let report: LeaseReport
        do {
            report = try await fleet.renew(live.all())
        } catch {
            configuration.logger.warning("cannot renew leases", metadata: ["error": "\(error)"])
            await perform(queue.renewalFailed(now: clock.seconds()))
            return
        }
        await perform(queue.renewed(report, now: clock.seconds()))
    }

    /// Applies a remove another host left for a download running here. No one waits for the
    /// answer, so a failure is logged (the row keeps its command: the next renewal brings it
    /// again while the download still runs here).
    func removeForAnotherHost(_ id: DownloadID, deleteFile: Bool) async {
        do {
            try await remove(id, deleteFile: deleteFile)
        } catch let error as HaulError where error.code == .notFound {
            // Removed meanwhile (an earlier renewal's copy of the same command): what was asked.
        } catch {
            configuration.logger.error(
                "cannot apply another host's remove",
                metadata: [
                    "id": "\(id)", "error": "\(error)",
                ])
        }
    }

    /// The queue is done with a run here: its lease ends.
    private func releaseLease(_ id: DownloadID, on fleet: any SharedQueueStore) async {
        do {
            try await fleet.release(id)
        } catch {
            // It expires by itself; another host then takes the download over from its record.
            configuration.logger.warning("cannot release a lease", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// The fleet's shared store, for the actions the queue sends there (`.pauseEverywhere`,
    /// `.removeThroughHost`): a local manager is never sent there.
    func sharedStore() throws(HaulError) -> any SharedQueueStore {
        guard let fleet else { throw HaulError(.internal, "not part of a fleet") }
        return fleet
    }

    /// Pauses or removes a download that does not run here: at once when no host holds it,
    /// else through a command its host applies at its next renewal; waits (a few seconds at
    /// most) until the record says it happened. Returns the record as it ended up.
    func fleetRequest(_ command: FleetCommand, for id: DownloadID) async throws -> DownloadRecord {
        guard case .applied(let applied, let before) = try await sharedStore().request(command, for: id) else {
            return try await fleetAwait(command, of: id)
        }
        _ = try await performCalling(queue.fleetApplied(command, applied, before: before))
        return applied
    }

    /// Waits until the record of a download another host holds shows `command` carried out (or
    /// it finished), reading it every 20 ms. The queue decides when it has waited long enough
    /// (`DownloadQueue.remoteSeen`): then a `conflict` naming the host, whose command stays
    /// stored. Returns the record as it ended up.
    func fleetAwait(_ command: FleetCommand, of id: DownloadID) async throws -> DownloadRecord {
        let holder = await fleetRuns([id])[id]?.host
        let ask = queue.remoteAsked(command, of: id, now: clock.seconds())
        do {
            while true {
                let record = try await existingOrRemoved(id)
                for action in queue.remoteSeen(ask, status: record.status, holder: holder, now: clock.seconds()) {
                    switch action {
                    case .remoteRefused(_, let error): throw error
                    default: return record
                    }
                }
                try await clock.sleep(for: .milliseconds(20))
            }
        } catch {
            queue.remoteAbandoned(ask)
            throw error
        }
    }
}
