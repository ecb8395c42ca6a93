/// A download whose user named no connection count finds one (`ConnectionGrowth`): the planner
/// decides from the speeds the ticks measure; here its decisions become the connection limit.
extension DownloadStateMachine {
    /// A start (or a start-over) begins growth afresh for a request that names no count.
    mutating func beginGrowth() {
        growth = record.request.growsConnections ? ConnectionGrowth(start: record.request.connections) : nil
    }

    /// At each tick while the download fetches: a step up opens connections (within the host's
    /// budget), a step that did not pay lowers the limit again (the extra connections leave at
    /// their piece ends: no running request is cut for a limit).
    mutating func growConnections(now: Double) -> [Action] {
        guard growth?.isDone == false, isFetching, rangesProven, let expected = expectedLength else { return [] }
        let (receiving, open, completed) = (
            connections.values.filter { $0.phase == .receiving }.count, connections.count, completedLength
        )
        let decision =
            growth?.tick(
                receiving: receiving, open: open, completed: completed, remaining: expected - completed, now: now)
            ?? .wait
        switch decision {
        case .wait:
            return []
        case .grow(let count):
            return step(to: count)
        case .settle(let count):
            connectionLimit = min(connectionLimit, count)
            return [.notify(.connectionsSettled(connectionLimit))]
        }
    }

    /// Raises the limit to `count`, or as far as the host's budget allows (a step that opens
    /// fewer is measured with those, and is the last). With no room at all (other downloads to
    /// the host), the step is held until `setAllowance` raises the allowance.
    private mutating func step(to count: Int) -> [Action] {
        guard min(count, allowance) > connectionLimit else {
            growth?.hold(count)
            return []
        }
        connectionLimit = min(count, allowance)
        return [.notify(.connectionsGrown(connectionLimit))] + openMoreConnections()
    }

    /// The host's budget grew: a step held for want of room is taken now.
    mutating func releaseGrowth() -> [Action] {
        guard let count = growth?.release() else { return [] }
        return step(to: count)
    }

    /// A refusal or a 429/503 ends growth: the refusal rule takes the count from there.
    mutating func stopGrowing() {
        growth?.stop()
    }
}
