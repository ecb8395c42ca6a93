import Testing

@testable import HaulCore

/// Whatever path a change takes (the quick one for a host without a budget, or dealing permits),
/// it reports exactly the allowances that changed, and never lets a host's connections exceed
/// its budget: checked after every step of random joins, uses, leaves and refusals.
@Suite(.timeLimit(.minutes(1))) struct ConnectionBudgetChangesTests {
    @Test(arguments: [nil, 6] as [Int?]) func changesAreExactlyTheAllowancesThatMoved(limit: Int?) {
        var budget = ConnectionBudget(limit: limit)
        var generator = SystemRandomNumberGenerator()
        var members: [DownloadID] = []
        let hosts = ["http://a:80", "http://b:80"]
        var hostOf: [DownloadID: String] = [:]
        var now = 0.0
        for step in 0..<2_000 {
            now += 0.1
            let host = hosts.randomElement(using: &generator)!
            let before = hosts.map { budget.allowances($0, now: now) }
            var changes: ConnectionBudget.Changes
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<4:
                let id = DownloadID.random()
                members.append(id)
                hostOf[id] = host
                changes = budget.join(id, host: host, wants: Int.random(in: 1...4, using: &generator), now: now)
            case 4..<6 where !members.isEmpty:
                let id = members.randomElement(using: &generator)!
                let allowance = budget.allowance(id, host: hostOf[id]!, now: now)
                changes = budget.using(
                    id, host: hostOf[id]!, count: Int.random(in: 0...max(0, allowance), using: &generator), now: now)
            case 6..<8 where !members.isEmpty:
                let id = members.remove(at: Int.random(in: 0..<members.count, using: &generator))
                changes = budget.leave(id, host: hostOf[id]!, now: now)
                hostOf[id] = nil
            case 8:
                changes = budget.refused(host: host, seconds: 1, now: now)
            default:
                changes = budget.expire(now: now)
            }
            let after = hosts.map { budget.allowances($0, now: now) }
            var moved: ConnectionBudget.Changes = [:]
            for (index, allowances) in after.enumerated() {
                for (id, allowance) in allowances where (before[index][id] ?? 0) != allowance { moved[id] = allowance }
            }
            #expect(
                changes.filter { moved[$0.key] != $0.value }.isEmpty
                    && moved.filter { changes[$0.key] != $0.value }.isEmpty,
                "step \(step): reported \(changes), moved \(moved)")
            for (index, allowances) in after.enumerated() {
                if let cap = budget.budget(hosts[index], now: now) {
                    #expect(allowances.values.reduce(0, +) <= cap, "step \(step): over the budget of \(hosts[index])")
                }
            }
        }
    }
}
