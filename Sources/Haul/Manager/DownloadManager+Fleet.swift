import HaulCore
import Logging

/// What a manager that is one host of a fleet keeps beside its runs.
struct FleetState {
    /// Whether the loop that renews leases, hears commands and claims work was started.
    var started = false
    /// Wakes the loop; finished to end it.
    var wake: AsyncStream<Void>.Continuation?
    /// When a renewal last succeeded (or the fleet started), in the manager's clock's seconds.
    var lastRenewal: Double = 0
    /// When a renewal was last tried; nil before the first.
    var lastRenewalAttempt: Double?
    /// Another host notified a command for this one: renew at the next turn, due or not.
    var renewNow = false
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
        guard let fleet else { return [:] }
        do {
            return try await fleet.runs(ids)
        } catch {
            // Only the live progress of other hosts' runs is missing: the records are still answered.
            configuration.logger.warning("cannot read the fleet's live runs", metadata: ["error": "\(error)"])
            return [:]
        }
    }

    var renewInterval: Duration {
        guard let fleet else { return .seconds(1) }
        return min(configuration.fleetRenewInterval ?? .seconds(1), fleet.leaseTimeout / 4)
    }

    func startFleet() {
        guard let fleet, !fleetState.started else { return }
        fleetState.started = true
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        fleetState.wake = wake
        fleetState.lastRenewal = clock.seconds()
        // Claims look for work every second whatever the renewal's pace.
        let interval = min(.seconds(1), renewInterval)
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
    func commandNoticed() {
        fleetState.renewNow = true
        wakeFleet()
    }

    /// Asks the loop for a claim soon (a download was added or a slot freed).
    func wakeFleet() {
        fleetState.wake?.yield()
    }

    /// One turn of the loop: renew when due, then fill free slots (`DownloadQueue.claimRequest`).
    func fleetTick() async {
        guard let fleet, !queue.isShuttingDown else { return }
        let now = clock.seconds()
        let due = fleetState.lastRenewalAttempt.map { now - $0 >= renewInterval.seconds } ?? true
        if due || queue.holdsSuspended || fleetState.renewNow {
            fleetState.lastRenewalAttempt = now
            fleetState.renewNow = false
            guard await renewLeases(fleet) else { return }
        }
        if let claim = queue.claimRequest() { await perform([claim]) }
    }

    /// Claims downloads for free slots; the queue starts them.
    func claim(limit: Int, excluding: Set<DownloadID>) async {
        guard let fleet else { return }
        do {
            let claimed = try await fleet.claim(limit: limit, excluding: Array(excluding))
            await perform(queue.claimed(claimed, limit: limit))
        } catch {
            configuration.logger.warning("cannot claim downloads", metadata: ["error": "\(error)"])
        }
    }

    /// Renews every lease held here; returns whether the database answered.
    private func renewLeases(_ fleet: any SharedQueueStore) async -> Bool {
        let report: LeaseReport
        do {
            report = try await fleet.renew(live.all())
        } catch {
            configuration.logger.warning("cannot renew leases", metadata: ["error": "\(error)"])
            let outage = Duration.milliseconds(Int64((clock.seconds() - fleetState.lastRenewal) * 1000))
            await perform(queue.renewalFailed(outage: outage, leaseTimeout: fleet.leaseTimeout))
            return false
        }
        fleetState.lastRenewal = clock.seconds()
        await perform(queue.renewed(report))
        return true
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
    func releaseLease(_ id: DownloadID) async {
        guard let fleet else { return }
        do {
            try await fleet.release(id)
        } catch {
            // It expires by itself; another host then takes the download over from its record.
            configuration.logger.warning("cannot release a lease", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// The fleet's shared store, for the steps the queue sends there (`DownloadQueue.PauseStep`,
    /// `RemoveStep`): a local manager is never sent there.
    func sharedStore() throws(HaulError) -> any SharedQueueStore {
        guard let fleet else { throw HaulError(.internal, "not part of a fleet") }
        return fleet
    }

    /// Pauses or removes a download that does not run here: at once when no host holds it,
    /// else through a command its host applies at its next renewal; waits (a few seconds at
    /// most) until the record says it happened. Returns the record as it ended up.
    func fleetRequest(_ command: FleetCommand, for id: DownloadID) async throws -> DownloadRecord {
        if case .applied(let applied, let before) = try await sharedStore().request(command, for: id) {
            if command != .pause {
                await removeFiles(of: applied, deleteFile: command == .removeWithFile, status: before)
                queue.forgetGiven(id)
            }
            hub.publish(DownloadEvent(id: id, kind: command == .pause ? .paused : .removed))
            return applied
        }
        return try await fleetAwait(command == .pause ? .paused : .removed, of: id)
    }

    /// Waits (a few seconds at most) until the record of a download another host runs shows
    /// `wanted` (or it finished). Returns the record as it ended up.
    func fleetAwait(_ wanted: DownloadStatus, of id: DownloadID) async throws -> DownloadRecord {
        var record = try await existingOrRemoved(id)
        for _ in 0..<500 where record.status != wanted && !record.status.isTerminal {
            try await clock.sleep(for: .milliseconds(20))
            record = try await existingOrRemoved(id)
        }
        return record
    }
}
