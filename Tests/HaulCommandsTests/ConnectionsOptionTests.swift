import ArgumentParser
import HaulCore
import Testing

@testable import HaulCommands

/// `-x`: a fixed count when given (1 to 64, anything else a one-line usage error), absent a
/// download that starts at 4 and finds its count.
@Suite(.timeLimit(.minutes(1))) struct ConnectionsOptionTests {
    @Test func aCountOutsideOneTo64IsRefusedInOneLine() {
        for count in ["0", "65"] {
            do {
                _ = try GetCommand.parse(["-x", count, "http://127.0.0.1:9/f"])
                Issue.record("haul get -x \(count) was taken")
            } catch {
                #expect(GetCommand.message(for: error) == "-x must be between 1 and 64, not \(count)")
            }
        }
    }

    @Test func everyCommandAndTheEngineRefuseACountInTheSameWords() throws {
        let commands: [(String, (String) throws -> Void)] = [
            ("haul serve", { _ = try ServeCommand.parse(["-x", $0]) }),
            ("haul add", { _ = try AddCommand.parse(["-x", $0, "http://127.0.0.1:9/f"]) }),
        ]
        for (name, parse) in commands {
            do {
                try parse("65")
                Issue.record("\(name) -x 65 was taken")
            } catch {
                #expect(GetCommand.message(for: error) == "-x must be between 1 and 64, not 65", "\(name)")
            }
        }
        #expect(throws: HaulError(.usage, "connections must be between 1 and 64, not 65")) {
            _ = try DownloadRequest(
                url: RemoteURL("http://127.0.0.1:9/f"), destination: .directory("/tmp"), connections: 65)
        }
        #expect(throws: HaulError(.badRequest, "connections must be between 1 and 64, not 0")) {
            try Limits.check(connections: 0)
        }
        #expect(Limits.problem(1024, in: Limits.connectionsPerHost, field: "--max-connections-per-host") == nil)
    }

    @Test func absentItGrowsFromFourGivenItIsFixed() throws {
        let absent = try GetCommand.parse(["http://127.0.0.1:9/f"]).requestTemplate(reporter: Reporter(mode: .quiet))
        let request = try absent.request(for: .urls("http://127.0.0.1:9/f"))
        #expect(request.connections == 4 && request.growsConnections)
        let given = try GetCommand.parse(["-x", "8", "http://127.0.0.1:9/f"]).requestTemplate(
            reporter: Reporter(mode: .quiet))
        let fixed = try given.request(for: .urls("http://127.0.0.1:9/f"))
        #expect(fixed.connections == 8 && !fixed.growsConnections)
    }
}
