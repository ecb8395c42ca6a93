/// A download whose user named no connection count finds one (`ConnectionGrowth`): the planner
/// decides from the speeds the ticks measure; here its decisions become the connection limit.
extension DownloadStateMachine {
    /// At each tick while the download fetches: a step up opens connections (within the host's
    /// budget), a step that did not pay lowers the limit again (the extra connections leave at
    /// their piece ends: no running request is cut for a limit).
    mutating func growConnections(now: Double) -> [Action] {
        guard var growth, !growth.isDone, isFetching, rangesProven, let expected = expectedLength else { return [] }
        let receiving = connections.values.filter { $0.phase == .receiving }.count
        let decision = growth.tick(receiving: receiving, open: connections.count, completed: completedLength,
                                   remaining: expected - completedLength, now: now)
        defer { self.growth = growth }
        switch decision {
        case .wait:
            return []
        case .grow(let count):
            // No room in the host's budget now (other downloads to it): the step waits for it.
            guard min(count, allowance) > connectionLimit else {
                growth.hold(count)
                return []
            }
            return step(to: count)
        case .settle(let count):
            connectionLimit = min(connectionLimit, count)
            return [.notify(.connectionsSettled(connectionLimit))]
        }
    }

    /// Raises the limit to `count`, or as far as the host's budget allows (a step that opens
    /// fewer is measured with those, and is the last).
    private mutating func step(to count: Int) -> [Action] {
        connectionLimit = min(count, allowance)
        return [.notify(.connectionsGrown(connectionLimit))] + openMoreConnections()
    }

    /// The host's budget grew: a step held for want of room is taken now.
    mutating func releaseGrowth() -> [Action] {
        guard let count = growth?.release() else { return [] }
        guard min(count, allowance) > connectionLimit else {
            growth?.hold(count)
            return []
        }
        return step(to: count)
    }

    /// A refusal or a 429/503 ends growth: the refusal rule takes the count from there.
    mutating func stopGrowing() {
        growth?.stop()
    }
}
