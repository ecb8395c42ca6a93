import ArgumentParser
import HaulAPI
import HaulCore
import Testing

@testable import HaulCommands

/// `-j` takes what the API and aria2's `max-concurrent-downloads` take (`Limits.concurrentDownloads`),
/// so a daemon never runs with a count its own API would refuse to set again.
@Suite(.timeLimit(.minutes(1))) struct JobsLimitTests {
    @Test func jobsOutsideTheLimitAreRefusedByGetAndServe() throws {
        for jobs in ["0", "1001"] {
            do {
                _ = try GetCommand.parse(["-j", jobs, "http://127.0.0.1:9/f"])
                Issue.record("haul get -j \(jobs) was taken")
            } catch {
                #expect(GetCommand.message(for: error) == "-j must be between 1 and 1000, not \(jobs)")
            }
            do {
                _ = try ServeCommand.parse(["-j", jobs])
                Issue.record("haul serve -j \(jobs) was taken")
            } catch {
                #expect(ServeCommand.message(for: error) == "-j must be between 1 and 1000, not \(jobs)")
            }
        }
        #expect(try GetCommand.parse(["-j", "1000", "http://127.0.0.1:9/f"]).jobs == 1000)
        #expect(try ServeCommand.parse(["-j", "1"]).jobs == 1)
        let refused = #expect(throws: HaulError.self) { try Limits.check(maxConcurrentDownloads: 1001) }
        #expect(refused?.message == "maxConcurrentDownloads must be between 1 and 1000, not 1001")
        try Limits.check(maxConcurrentDownloads: 1000)
    }
}
