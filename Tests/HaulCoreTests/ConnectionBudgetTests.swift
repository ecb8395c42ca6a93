import HaulCore
import Testing

/// One budget of connections per host, shared fairly by every download to it.
@Suite(.timeLimit(.minutes(1))) struct ConnectionBudgetTests {
    let host = "https://cdn.example:443"
    func id(_ number: Int) -> DownloadID { DownloadID(rawValue: "\(number)") }

    @Test func theHostIsSchemeHostAndPort() throws {
        #expect(ConnectionBudget.host(of: try RemoteURL("https://CDN.example/a")) == "https://cdn.example:443")
        #expect(ConnectionBudget.host(of: try RemoteURL("http://cdn.example:8080/b")) == "http://cdn.example:8080")
    }

    @Test func sixteenDownloadsOfEightShareFourConnections() {
        var budget = ConnectionBudget(limit: 4)
        var allowances: [DownloadID: Int] = [:]
        for number in 1...16 {
            allowances.merge(budget.join(id(number), host: host, wants: 8, now: 0)) { $1 }
            allowances[id(number)] = budget.allowance(id(number), host: host, now: 0)
        }
        // The first took all four; the others wait for theirs (0), and what the first is allowed
        // now is its share of one.
        #expect(allowances[id(1)] == 1)
        #expect((2...16).allSatisfy { allowances[id($0)] == 0 })
        // The first lets three connections go where their pieces end: one each for 2, 3 and 4.
        let freed = budget.using(id(1), host: host, count: 1, now: 0)
        #expect(freed == [id(2): 1, id(3): 1, id(4): 1])
        let total = (1...16).reduce(0) { $0 + budget.allowance(id($1), host: host, now: 0) }
        #expect(total == 4)
        // One ends: the next in line gets its connection.
        #expect(budget.leave(id(2), host: host, now: 0) == [id(5): 1])
    }

    @Test func aDownloadAloneGetsWhatItWantsUpToTheLimit() {
        var budget = ConnectionBudget(limit: 6)
        _ = budget.join(id(1), host: host, wants: 8, now: 0)
        #expect(budget.allowance(id(1), host: host, now: 0) == 6)
        _ = budget.join(id(2), host: "http://other:80", wants: 8, now: 0)
        #expect(budget.allowance(id(2), host: "http://other:80", now: 0) == 6) // another host's budget
        // A second download to the same host: the first's allowance drops to its share at once.
        #expect(budget.join(id(3), host: host, wants: 8, now: 0) == [id(1): 3])
        #expect(budget.allowance(id(3), host: host, now: 0) == 0) // until the first lets three go
        #expect(budget.using(id(1), host: host, count: 4, now: 0) == [id(3): 2])
        #expect(budget.using(id(1), host: host, count: 3, now: 0) == [id(3): 3])
    }

    @Test func withoutALimitEachGetsWhatItWants() {
        var budget = ConnectionBudget(limit: nil)
        for number in 1...4 { _ = budget.join(id(number), host: host, wants: 16, now: 0) }
        #expect((1...4).allSatisfy { budget.allowance(id($0), host: host, now: 0) == 16 })
    }

    /// A refusal lowers the host's budget below what its downloads hold, for a while, then it
    /// comes back.
    @Test func aRefusalLowersTheHostForAWhile() {
        var budget = ConnectionBudget(limit: nil)
        _ = budget.join(id(1), host: host, wants: 4, now: 0)
        _ = budget.join(id(2), host: host, wants: 4, now: 0)
        let lowered = budget.refused(host: host, seconds: 60, now: 10)
        #expect(budget.budget(host, now: 10) == 7)
        #expect(lowered == [id(2): 3]) // the later download gives one back
        #expect(budget.nextExpiry == 70)
        #expect(budget.expire(now: 30) == [:])
        #expect(budget.expire(now: 70) == [id(2): 4])
        #expect(budget.budget(host, now: 70) == nil)
    }

    @Test func refusalsNeverLowerTheBudgetBelowOne() {
        var budget = ConnectionBudget(limit: 8)
        _ = budget.join(id(1), host: host, wants: 2, now: 0)
        for _ in 0..<5 { _ = budget.refused(host: host, seconds: 60, now: 0) }
        #expect(budget.budget(host, now: 0) == 1)
        #expect(budget.allowance(id(1), host: host, now: 0) == 1)
    }

    /// Without a budget, a download that finds its count may grow to its ceiling only while it
    /// is its host's only download: with others it keeps its start, and grows again once alone.
    /// One with a fixed count keeps what it asked for either way.
    @Test func withoutABudgetADownloadGrowsOnlyWhileAloneOnItsHost() {
        var budget = ConnectionBudget(limit: nil)
        #expect(budget.join(id(1), host: host, wants: 16, growsFrom: 4, now: 0) == [id(1): 16])
        #expect(budget.allowance(id(1), host: host, now: 0) == 16)
        // A second download to the host: the first falls back to its start.
        let joined = budget.join(id(2), host: host, wants: 16, growsFrom: 1, now: 0)
        #expect(joined == [id(1): 4, id(2): 1])
        let fixed = budget.join(id(3), host: host, wants: 8, now: 0)
        #expect(fixed == [id(3): 8])
        #expect(budget.allowance(id(2), host: host, now: 0) == 1)
        // Another host is another budget.
        #expect(budget.join(id(4), host: "http://other:80", wants: 16, growsFrom: 4, now: 0) == [id(4): 16])
        // Alone again: the ceiling.
        _ = budget.leave(id(3), host: host, now: 0)
        #expect(budget.leave(id(1), host: host, now: 0) == [id(2): 16])
    }

    /// With a budget, a growing download wants its ceiling and gets its fair share like any other.
    @Test func withABudgetAGrowingDownloadTakesItsShare() {
        var budget = ConnectionBudget(limit: 10)
        _ = budget.join(id(1), host: host, wants: 16, growsFrom: 4, now: 0)
        #expect(budget.allowance(id(1), host: host, now: 0) == 10)
        _ = budget.join(id(2), host: host, wants: 16, growsFrom: 4, now: 0)
        _ = budget.using(id(1), host: host, count: 5, now: 0)
        #expect(budget.allowance(id(1), host: host, now: 0) == 5)
        #expect(budget.allowance(id(2), host: host, now: 0) == 5)
    }
}
