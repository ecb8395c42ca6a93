import Foundation
import Testing

/// README's quick start runs the tests as CI does: its test command is the line `.ci/run` runs,
/// with the environment `.ci/run` gives it (at most eight tests at a time there). A quick start
/// that typed another command ran another suite: full parallelism on two cores put tests past
/// their time limits, and past the descriptors Foundation's `Process.run` survives.
@Suite(.timeLimit(.minutes(1))) struct TestCommandTests {
    static let root = DocumentationCodeBlocksTests.root

    /// The commands of README's quick start: the lines of its `sh` block, comments and blank
    /// lines aside.
    static func quickStartCommands() throws -> [String] {
        let text = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let section = lines.firstIndex(of: "## Quick start"),
            let open = lines[section...].firstIndex(of: "```sh"),
            let close = lines[(open + 1)...].firstIndex(of: "```")
        else { return [] }
        return lines[(open + 1)..<close].filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The test command as `.ci/run` runs it: the variables it exports before the line that runs
    /// `swift test`, then that line. Nil unless exactly one line runs `swift test`.
    static func ciTestCommand() throws -> String? {
        let text = try String(contentsOfFile: root + "/.ci/run", encoding: .utf8)
        var exported: [String] = []
        var commands: [String] = []
        for line in text.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(separator: " ").map(String.init)
            if words.first == "export" {
                exported += words.dropFirst()
            } else if zip(words, words.dropFirst()).contains(where: { $0 == ("swift", "test") }) {
                commands.append((exported + [line]).joined(separator: " "))
            }
        }
        return commands.count == 1 ? commands[0] : nil
    }

    @Test func readmesTestCommandIsTheOneCIRuns() throws {
        let quickStart = try Self.quickStartCommands()
        #expect(quickStart.count == 2, "the quick start is two commands: \(quickStart)")
        let ci = try #require(try Self.ciTestCommand(), ".ci/run runs swift test on one line")
        #expect(quickStart.last == ci, "README's test command is what .ci/run runs")
    }
}
