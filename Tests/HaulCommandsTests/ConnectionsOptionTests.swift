@testable import HaulCommands
import ArgumentParser
import HaulCore
import Testing

/// `-x`: a fixed count when given (1 to 64, anything else a one-line usage error), absent a
/// download that starts at 4 and finds its count.
@Suite(.timeLimit(.minutes(1))) struct ConnectionsOptionTests {
    @Test func aCountOutsideOneTo64IsRefusedInOneLine() {
        for count in ["0", "65"] {
            do {
                _ = try GetCommand.parse(["-x", count, "http://127.0.0.1:9/f"])
                Issue.record("haul get -x \(count) was taken")
            } catch {
                #expect(GetCommand.message(for: error) == "-x must be between 1 and 64 (got \(count))")
            }
        }
    }

    @Test func absentItGrowsFromFourGivenItIsFixed() throws {
        let absent = try GetCommand.parse(["http://127.0.0.1:9/f"]).requestTemplate(reporter: Reporter(mode: .quiet))
        let request = try absent.request(for: .urls("http://127.0.0.1:9/f"))
        #expect(request.connections == 4 && request.growsConnections)
        let given = try GetCommand.parse(["-x", "8", "http://127.0.0.1:9/f"]).requestTemplate(reporter: Reporter(mode: .quiet))
        let fixed = try given.request(for: .urls("http://127.0.0.1:9/f"))
        #expect(fixed.connections == 8 && !fixed.growsConnections)
    }
}
