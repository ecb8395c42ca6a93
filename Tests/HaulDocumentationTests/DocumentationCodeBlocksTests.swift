import Foundation
import Testing

/// Every Swift code block of README.md and of the DocC articles is code the examples compile:
/// its lines, trimmed and without blank ones, appear in that order, together, in one file of
/// `Examples/`. A block edited in the text alone, or code changed without its text, fails here.
@Suite(.timeLimit(.minutes(1))) struct DocumentationCodeBlocksTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The Swift blocks of a Markdown file, as lists of trimmed, non-blank lines.
    static func swiftBlocks(in path: String) throws -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if current != nil, trimmed == "```" {
                blocks.append(current ?? [])
                current = nil
            } else if !trimmed.isEmpty {
                current?.append(trimmed)
            }
        }
        return blocks
    }

    /// The examples' sources, each as its trimmed, non-blank lines.
    static func examples() throws -> [String: [String]] {
        let directory = root + "/Tests/HaulDocumentationTests/Examples"
        var files: [String: [String]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".swift") {
            files[name] = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return files
    }

    static func documents() throws -> [String] {
        var paths = [root + "/README.md"]
        for target in ["Haul", "HaulCore", "HaulStore"] {
            let catalog = root + "/Sources/\(target)/\(target).docc"
            for name in try FileManager.default.contentsOfDirectory(atPath: catalog) where name.hasSuffix(".md") {
                paths.append(catalog + "/" + name)
            }
        }
        return paths
    }

    @Test func everySwiftBlockIsCompiledExampleCode() throws {
        let examples = try Self.examples()
        var checked = 0
        for document in try Self.documents() {
            for block in try Self.swiftBlocks(in: document) {
                let found = examples.contains { _, lines in
                    lines.indices.contains { start in
                        start + block.count <= lines.count && Array(lines[start..<start + block.count]) == block
                    }
                }
                #expect(
                    found,
                    """
                    a block of \(document) is not in Tests/HaulDocumentationTests/Examples (after a change of an \
                    example, python3 docs/sync-examples.py copies it into the texts):
                    \(block.joined(separator: "\n"))
                    """
                )
                checked += 1
            }
        }
        #expect(checked >= 8, "README and the articles show at least eight blocks (\(checked) found)")
    }
}
