/// A download whose user named no connection count finds one (`ConnectionGrowth`): the planner
/// decides from the speeds the ticks measure; here its decisions become the connection limit.
extension DownloadStateMachine {
    /// At each tick while the download fetches: a step up opens connections (within the host's
    /// budget), a step that did not pay lowers the limit again (the extra connections leave at
    /// their piece ends: no running request is cut for a limit).
    mutating func growConnections(now: Double) -> [Action] {
        guard var growth, !growth.isDone, isFetching, rangesProven, let total = record.totalLength else { return [] }
        let receiving = connections.values.filter { $0.phase == .receiving }.count
        let decision = growth.tick(receiving: receiving, open: connections.count, completed: completedLength,
                                   remaining: total - (record.request.range?.start ?? 0) - completedLength, now: now)
        defer { self.growth = growth }
        switch decision {
        case .wait:
            return []
        case .grow(let count):
            // The host's budget is where growth ends.
            let allowed = min(count, allowance)
            guard allowed > connectionLimit else {
                growth.stop()
                return [.notify(.connectionsSettled(connectionLimit))]
            }
            if allowed < count { growth.stop() }
            connectionLimit = allowed
            return [.notify(.connectionsGrown(allowed))] + openMoreConnections()
        case .settle(let count):
            connectionLimit = min(connectionLimit, count)
            return [.notify(.connectionsSettled(connectionLimit))]
        }
    }

    /// A refusal or a 429/503 ends growth: the refusal rule takes the count from there.
    mutating func stopGrowing() {
        growth?.stop()
    }
}
