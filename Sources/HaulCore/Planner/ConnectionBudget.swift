/// One budget of connections per host, shared fairly by every download to it
/// (`--max-connections-per-host`), and lowered for a while when the host refuses a connection
/// (429, 503): what aria2's users have asked for since aria2 #577. Pure bookkeeping: the engine
/// keeps one behind a lock and tells each download's machine its allowance.
///
/// Each download *joins* its host wanting some connections (its `-x`) and *holds* permits: its
/// allowance, the most connections its machine may have at once. Permits are never taken back
/// from a running connection: when a download's fair share shrinks (another download joined,
/// the host refused), its allowance drops at once, its machine lets connections go where their
/// pieces end, and it reports what it still uses; the permits it gave back go to the downloads
/// below their share, those that joined first first. So the connections to one host never
/// exceed the budget, and a download never fails for getting fewer than it asked for: with more
/// downloads than permits, the latest wait for their first one.
public struct ConnectionBudget: Sendable {
    /// The host a download's connections go to: scheme, host and port of its URL.
    public static func host(of url: RemoteURL) -> String {
        "\(url.scheme)://\(url.host.lowercased()):\(url.effectivePort)"
    }

    struct Member: Sendable {
        var wants: Int
        var held = 0
        let order: Int
        /// A download that finds its count (`ConnectionGrowth`): `wants` is the ceiling, this the
        /// count it starts at. Without a budget it may grow only while alone on its host: twenty
        /// such downloads to one server must not open twenty times the ceiling.
        var start: Int? = nil

        /// What it may have on a host without a budget, where `alone` says whether it is the
        /// host's only download.
        func unbudgeted(alone: Bool) -> Int {
            guard let start, !alone else { return wants }
            return min(start, wants)
        }
    }

    struct Host: Sendable {
        var members: [DownloadID: Member] = [:]
        /// After a refusal: the budget until `loweredUntil`.
        var lowered: Int?
        var loweredUntil: Double = 0
    }

    /// Connections to one host at once, over every download; nil: no limit of our own (a
    /// refusal still lowers it for a while).
    public let limit: Int?
    var hosts: [String: Host] = [:]
    var joined = 0

    /// A budget of `limit` connections per host (under 1 counts as 1); nil for no limit of our own.
    public init(limit: Int?) {
        self.limit = limit.map { max(1, $0) }
    }

    /// Allowances that changed: the download's new allowance.
    public typealias Changes = [DownloadID: Int]

    /// `id` starts, wanting `wants` connections to `host`; `growsFrom`: it finds its count,
    /// starting there, and `wants` is its ceiling.
    public mutating func join(_ id: DownloadID, host: String, wants: Int, growsFrom start: Int? = nil, now: Double)
        -> Changes
    {
        changing(host, touching: id, now: now) { budget in
            budget.joined += 1
            budget.hosts[host, default: Host()].members[id] = Member(
                wants: max(1, wants), order: budget.joined,
                start: start.map { max(1, $0) })
        }
    }

    /// `id` now has `count` connections (its machine let some go): permits above its share that
    /// it no longer uses go to the others.
    public mutating func using(_ id: DownloadID, host: String, count: Int, now: Double) -> Changes {
        changing(host, touching: id, now: now) { budget in
            guard var member = budget.hosts[host]?.members[id] else { return }
            // No budget: its share is what it wants, without dealing every member's (a run's
            // every change of count did, under the lock all runs share).
            let share = budget.budget(host, now: now) == nil ? member.wants : budget.targets(host, now: now)[id] ?? 0
            if member.held > share { member.held = max(count, share) }
            budget.hosts[host]?.members[id] = member
        }
    }

    /// `id` ended: all its permits go back.
    public mutating func leave(_ id: DownloadID, host: String, now: Double) -> Changes {
        var changes = changing(host, touching: id, now: now) { budget in
            budget.hosts[host]?.members[id] = nil
        }
        changes[id] = nil
        if let state = hosts[host], state.members.isEmpty, state.lowered == nil || state.loweredUntil <= now {
            hosts[host] = nil
        }
        return changes
    }

    /// `host` refused a connection: until `now + seconds` it gets one connection fewer than
    /// the downloads to it hold now (at least one).
    public mutating func refused(host: String, seconds: Double, now: Double) -> Changes {
        changing(host, now: now) { budget in
            guard var state = budget.hosts[host] else { return }
            let held = state.members.values.reduce(0) { $0 + $1.held }
            let current = state.loweredUntil > now ? state.lowered ?? Int.max : Int.max
            state.lowered = max(1, min(held - 1, current))
            state.loweredUntil = max(state.loweredUntil, now + seconds)
            budget.hosts[host] = state
        }
    }

    /// When the earliest lowered budget ends (for a timer), if any.
    public var nextExpiry: Double? {
        hosts.values.filter { $0.lowered != nil }.map(\.loweredUntil).min()
    }

    /// Lowered budgets whose time is up are lifted.
    public mutating func expire(now: Double) -> Changes {
        var changes: Changes = [:]
        for (key, state) in hosts where state.lowered != nil && state.loweredUntil <= now {
            if state.members.isEmpty {
                hosts[key] = nil
            } else {
                changes.merge(changing(key, now: now) { $0.hosts[key]?.lowered = nil }) { $1 }
            }
        }
        return changes
    }

    /// How many connections `id` may have now.
    public func allowance(_ id: DownloadID, host: String, now: Double) -> Int {
        guard let member = hosts[host]?.members[id] else { return 0 }
        // No budget: every download's share is what it wants (no need to deal them all).
        if budget(host, now: now) == nil {
            return min(member.held, member.unbudgeted(alone: hosts[host]?.members.count == 1))
        }
        return min(member.held, targets(host, now: now)[id] ?? 0)
    }

    /// The budget of `host` now: the lowered one until `expire` lifts it, else the limit.
    public func budget(_ host: String, now: Double) -> Int? {
        if let lowered = hosts[host]?.lowered { return min(lowered, limit ?? Int.max) }
        return limit
    }

    /// Each download's fair share: permits dealt one at a time in the order the downloads
    /// joined, to those that want more, until the budget is spent.
    func targets(_ host: String, now: Double) -> [DownloadID: Int] {
        guard let state = hosts[host] else { return [:] }
        var targets: [DownloadID: Int] = [:]
        let wanted = state.members.values.reduce(0) { $0 + $1.wants }
        guard let budget = budget(host, now: now), budget < wanted else {
            for (id, member) in state.members { targets[id] = member.wants }
            return targets
        }
        let members = state.members.sorted { $0.value.order < $1.value.order }
        var left = budget
        while left > 0 {
            var dealt = false
            for (id, member) in members where left > 0 && targets[id, default: 0] < member.wants {
                targets[id, default: 0] += 1
                left -= 1
                dealt = true
            }
            if !dealt { break }
        }
        return targets
    }

    /// Applies `change` to `host`, deals the free permits, and returns the allowances that
    /// changed. `touching`: the one download the change is about (a join, a count, a leave),
    /// which cannot lower the budget; nil for a change that may (a refusal, an expiry).
    mutating func changing(
        _ host: String, touching touched: DownloadID? = nil, now: Double, _ change: (inout ConnectionBudget) -> Void
    ) -> Changes {
        // A host without a budget (no limit, none lowered), the common case: every download
        // holds what it wants, so only the one the change touched can change, unless the host
        // went from one download to more or back (a lone download's grown count depends on it).
        // Nothing here copies the host's members: a thousand downloads joining one host cost a
        // thousand steps, not a thousand copies and sorts of them all.
        if budget(host, now: now) == nil {
            let wasAlone = hosts[host]?.members.count == 1
            let previous = touched == nil ? hosts[host]?.members ?? [:] : [:]
            change(&self)
            guard budget(host, now: now) == nil else {
                // The change lowered it: deal as usual, against the allowances from before.
                return dealt(
                    host, now: now, before: previous.mapValues { min($0.held, $0.unbudgeted(alone: wasAlone)) })
            }
            let alone = hosts[host]?.members.count == 1
            let ids =
                touched.flatMap { alone == wasAlone ? [$0] : nil } ?? hosts[host].map { Array($0.members.keys) } ?? []
            var changes: Changes = [:]
            for id in ids {
                guard let member = hosts[host]?.members[id] else { continue }
                let share = member.unbudgeted(alone: alone)
                // A member that just joined holds 0, and every share is at least 1.
                guard member.held != share else { continue }
                hosts[host]?.members[id]?.held = share
                changes[id] = share
            }
            return changes
        }
        let before = allowances(host, now: now)
        change(&self)
        return dealt(host, now: now, before: before)
    }

    /// Deals the free permits and returns the allowances that differ from `before`.
    private mutating func dealt(_ host: String, now: Double, before: [DownloadID: Int]) -> Changes {
        deal(host, now: now)
        var changes: Changes = [:]
        for (id, allowance) in allowances(host, now: now) where (before[id] ?? 0) != allowance {
            changes[id] = allowance
        }
        return changes
    }

    func allowances(_ host: String, now: Double) -> [DownloadID: Int] {
        guard let state = hosts[host] else { return [:] }
        let targets = targets(host, now: now)
        var allowances: [DownloadID: Int] = [:]
        for (id, member) in state.members { allowances[id] = min(member.held, targets[id] ?? 0) }
        return allowances
    }

    /// Free permits go to the downloads below their share, those that joined first first.
    mutating func deal(_ host: String, now: Double) {
        guard var state = hosts[host] else { return }
        let targets = targets(host, now: now)
        var free = (budget(host, now: now) ?? Int.max) - state.members.values.reduce(0) { $0 + $1.held }
        for (id, member) in state.members.sorted(by: { $0.value.order < $1.value.order }) where free > 0 {
            let target = targets[id] ?? 0
            guard member.held < target else { continue }
            let given = min(target - member.held, free)
            state.members[id]?.held += given
            free -= given
        }
        hosts[host] = state
    }
}
