import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// A host's budget lowered by a refusal is lifted when its time is up, by `HostBudgets.run()` (a
/// child of the manager's task group, on the manager's clock; it was an unstructured task).
@Suite(.timeLimit(.minutes(1))) struct HostBudgetExpiryTests {
    /// Joins `id` to `host` wanting four connections and holding them; returns what it hears.
    func member(_ budgets: HostBudgets, host: String) -> Watched<[Int]> {
        let heard = Watched<[Int]>([])
        let id = DownloadID.random()
        #expect(
            budgets.join(id, host: host, wants: 4) { allowance in heard.withLockedValue { $0.append(allowance) } } == 4)
        budgets.using(id, host: host, count: 4)
        return heard
    }

    @Test func aLoweredBudgetIsLiftedWhenItsTimeIsUp() async throws {
        let clock = ManualClock()
        let budgets = HostBudgets(limit: 8, clock: ClockAdapter(clock))
        let running = Task { await budgets.run() }
        let heard = member(budgets, host: "h")
        budgets.refused(host: "h", seconds: 30)
        // Lowered below what it held.
        #expect(await heard.wait { $0.last == 3 })
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(29))
        // Not yet: the sleep for its deadline goes on.
        #expect(await clock.waitForSleepers { $0.count == 1 })
        #expect(heard.value == [3])
        clock.advance(by: .seconds(2))
        #expect(await heard.wait { $0.last == 4 })
        budgets.close()
        await running.value
    }

    /// A later refusal of another host with an earlier end replaces the sleep for the later one:
    /// each budget is lifted at its own time.
    @Test func anEarlierDeadlineIsNotKeptWaitingByALaterOne() async throws {
        let clock = ManualClock()
        let budgets = HostBudgets(limit: 8, clock: ClockAdapter(clock))
        let running = Task { await budgets.run() }
        let slow = member(budgets, host: "slow")
        let quick = member(budgets, host: "quick")
        budgets.refused(host: "slow", seconds: 60)
        await clock.waitForSleepers(count: 1)
        budgets.refused(host: "quick", seconds: 5)
        #expect(await quick.wait { $0.last == 3 })
        // The sleep for 60 s was cancelled for one of 5 s.
        let five = clock.now.advanced(by: .milliseconds(5_001))
        #expect(await clock.waitForSleepers { $0 == [five] })
        clock.advance(by: .seconds(6))
        #expect(await quick.wait { $0.last == 4 })
        #expect(slow.value == [3])
        // Then the slow one's, at its own time.
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(55))
        #expect(await slow.wait { $0.last == 4 })
        budgets.close()
        await running.value
    }
}
