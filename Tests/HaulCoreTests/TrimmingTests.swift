import Foundation
import HaulCore
import Testing

/// What haul does without Foundation is what Foundation did: trimming as
/// `trimmingCharacters(in:)` does, paths as `standardizingPath`.
@Suite(.timeLimit(.minutes(1))) struct TrimmingTests {
    @Test func trimmedIsFoundationsTrimming() {
        for text in ["", "  ", " a ", "\t a b \n", "a", "\u{A0}x\u{2003}", "\r\n  https://h/x  \r\n"] {
            #expect(
                String(text.trimmed()) == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(text.debugDescription)")
        }
        #expect("[::1]".trimmed { $0 == "[" || $0 == "]" } == "::1")
    }

    @Test func normalizedIsFoundationsStandardizedPath() {
        for path in ["/", "/a", "/a/", "/a//b", "/a/./b", "/a/b/..", "/a/../../b", "/a/b/../c/.", "/./", "/.."] {
            #expect(Paths.normalized(path) == (path as NSString).standardizingPath, "\(path)")
        }
    }
}
