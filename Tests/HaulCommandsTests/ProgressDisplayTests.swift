import HaulCore
import Testing

@testable import HaulCommands

/// The progress display as text: what `haul get` draws for a handful or for thousands of downloads.
@Suite(.timeLimit(.minutes(1))) struct ProgressDisplayTests {
    typealias Display = ProgressDisplay
    typealias Row = ProgressDisplay.Row

    static let mib: Int64 = 1 << 20

    func summary(
        done: Int = 0, failed: Int = 0, total: Int = 1, running: Int = 1, queued: Int = 0, bytes: Int64 = 0,
        bytesPerSecond: Double = 0, filesPerSecond: Double = 0, knownRemainingBytes: Int64? = nil
    ) -> Display.Summary {
        .init(
            done: done, failed: failed, total: total, running: running, queued: queued, bytes: bytes,
            bytesPerSecond: bytesPerSecond, filesPerSecond: filesPerSecond, knownRemainingBytes: knownRemainingBytes)
    }

    /// Names meant to break the layout: long, wide, emoji sequences, combining marks, escape
    /// sequences, newlines, bidi overrides, nothing at all.
    static let hostileNames = [
        String(repeating: "x", count: 500),
        String(repeating: "日本語のファイル名", count: 20),
        String(repeating: "👨‍👩‍👧🇯🇵❤️", count: 10),
        "\u{1B}[2J\u{1B}[H evil\r\nname\u{7}\u{8}\u{8}\u{8}.bin",
        String(repeating: "e\u{301}\u{301}\u{301}", count: 50),
        "",
        "\u{202E}gpj.exe",
        "\u{200B}\u{200B}\u{301}",
        "ｆｕｌｌｗｉｄｔｈ.iso",
        "a\u{9B}31m\u{85}b\u{2028}c\u{2029}d\u{7F}",
    ]

    static var hostileRows: [Row] {
        hostileNames.enumerated().map { index, name in
            let states: [Row.State] = [.running, .retrying(attempt: 12, inSeconds: 3), .verifying]
            return Row(
                name: name, completed: Int64(index) * 1_000_003,
                total: index % 3 == 0 ? nil : (index % 4 == 0 ? Int64.max : 7 * 1_000_003),
                bytesPerSecond: [0, .nan, .infinity, -5, 1e30, 123_456][index % 6],
                connections: index % 2 == 0 ? 1 : 64, state: states[index % 3])
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
            || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    // MARK: Cell widths and names

    @Test(arguments: [
        ("abc", 3), ("日本", 4), ("e\u{301}", 1), ("😀", 2), ("❤\u{FE0F}", 2), ("…", 1), ("ｆ", 2), ("한", 2), ("", 0),
    ])
    func cellWidths(text: String, cells: Int) {
        #expect(Display.displayWidth(text) == cells)
    }

    @Test func controlCharactersCannotMoveTheCursor() {
        #expect(Display.sanitized("a\u{1B}[2Jb\n\r\tc\u{7F}\u{9B}d\u{202E}e\u{2028}") == "a?[2Jb???c??d?e?")
        // Characters that take no cell on their own go; combined ones stay.
        #expect(Display.sanitized("\u{301}x\u{200B}y\u{301}") == "xy\u{301}")
        let line = Display.frame(
            rows: [Row(name: "\u{1B}[1A\u{1B}[2Kx\r\n", completed: 1, total: 2)],
            summary: summary(), width: 80, height: 10)[0]
        #expect(!line.unicodeScalars.contains { Self.isControl($0) })
        #expect(line.hasPrefix("?[1A?[2Kx??"))
    }

    @Test func namesAreCutInTheMiddle() {
        #expect(Display.truncatedMiddle("abcdefghij", to: 5) == "ab…ij")
        #expect(Display.truncatedMiddle("abcdefghij", to: 6) == "ab…hij")
        #expect(Display.truncatedMiddle("short", to: 10) == "short")
        #expect(Display.truncatedMiddle("abc", to: 1) == "…")
        let wide = Display.truncatedMiddle("日本語ファイル", to: 6)
        #expect(wide == "日…ル")
        #expect(Display.displayWidth(wide) <= 6)

        let name = "abcdefghijklmnopqrstuvwxyz0123456789-a-very-long-file-name.tar.gz"
        let line = Display.frame(
            rows: [Row(name: name, completed: 0, total: 10)], summary: summary(), width: 200, height: 10)[0]
        let shown = String(line.prefix { $0 != "[" }).trimmingSuffix(" ")
        #expect(Display.displayWidth(shown) == Display.nameMax)
        #expect(shown.hasPrefix("abcdefghijklmnopqr"))
        #expect(shown.hasSuffix("name.tar.gz"))
        #expect(shown.contains("…"))
    }

    // MARK: Width and height

    @Test func noLineIsWiderThanTheTerminal() {
        let rows = Self.hostileRows
        let many = summary(
            done: 123_456_789, failed: 98_765, total: 999_999_999, running: 10, queued: 888_888_888,
            bytes: .max, bytesPerSecond: 1e30, filesPerSecond: .nan, knownRemainingBytes: .max)
        for width in 1...200 {
            for height in [1, 2, 3, 5, 24] {
                for sum in [summary(), many] {
                    let lines = Display.frame(rows: rows, summary: sum, width: width, height: height)
                    #expect(lines.count <= max(1, height - 1))
                    for line in lines {
                        #expect(Display.displayWidth(line) <= width, "width \(width): \(line)")
                        #expect(!line.unicodeScalars.contains { Self.isControl($0) })
                    }
                }
            }
            #expect(Display.displayWidth(Display.summaryLine(many, width: width)) <= width)
        }
    }

    /// ASCII only, so `count` is the width without trusting `displayWidth`.
    @Test func asciiLinesFitByCharacterCount() {
        let rows = (0..<30).map {
            Row(
                name: String(repeating: "n", count: $0 * 7), completed: Int64($0) * Self.mib,
                total: $0 % 2 == 0 ? 40 * Self.mib : nil, bytesPerSecond: Double($0) * 1e5,
                connections: $0 % 5, state: $0 % 7 == 0 ? .retrying(attempt: 3, inSeconds: 90) : .running)
        }
        for width in 20...200 {
            for line in Display.frame(rows: rows, summary: summary(total: 30, running: 30), width: width, height: 40) {
                #expect(line.count <= width && line.unicodeScalars.count <= width, "width \(width): \(line)")
            }
        }
    }

    @Test func tenThousandDownloadsTakeOneScreen() {
        let rows = (0..<10_000).map {
            Row(name: "file-\($0).bin", completed: Int64($0), total: 100_000, bytesPerSecond: 1000)
        }
        let lines = Display.frame(rows: rows, summary: summary(total: 10_000, running: 10_000), width: 80, height: 24)
        #expect(lines.count == 23)
        #expect(lines[0].hasPrefix("file-0.bin "))
        #expect(lines[20].hasPrefix("file-20.bin "))
        #expect(lines[21] == "… and 9979 more running")
        #expect(lines[22].hasPrefix("[ 0/10000 done"))
        #expect(!lines.contains { $0.hasPrefix("file-21.bin") })
    }

    @Test func theMoreLineCountsWhatIsHidden() {
        func rows(_ count: Int) -> [Row] { (0..<count).map { Row(name: "f\($0)", completed: 0, total: 1) } }
        // Everything fits in height - 2 rows: no "more" line.
        let exact = Display.frame(rows: rows(8), summary: summary(), width: 80, height: 10)
        #expect(exact.count == 9)
        #expect(!exact.contains { $0.contains("more") })
        // One too many: height - 3 rows and the "more" line.
        let over = Display.frame(rows: rows(9), summary: summary(), width: 80, height: 10)
        #expect(over.count == 9)
        #expect(over[6].hasPrefix("f6 "))
        #expect(over[7] == "… and 2 more running")
        // Narrow terminals shorten the line instead of wrapping it.
        #expect(Display.frame(rows: rows(100_000), summary: summary(), width: 20, height: 10)[7] == "… and 99993 more")
        // Too short for any row.
        let tiny = Display.frame(rows: rows(5), summary: summary(), width: 80, height: 3)
        #expect(tiny == ["… and 5 more running", Display.summaryLine(summary(), width: 80)])
        #expect(Display.frame(rows: rows(5), summary: summary(), width: 80, height: 1).count == 1)
    }

    // MARK: Columns

    @Test func barsStartAndEndInTheSameColumn() {
        let names = [
            "a", "medium-name.iso", "日本語のファイル名.zip", "👩‍💻 notes.txt", "e\u{301}te\u{301}.mkv",
            String(repeating: "long", count: 30),
        ]
        let rows = names.enumerated().map { Row(name: $1, completed: Int64($0) * 10, total: 100, bytesPerSecond: 5) }
        for width in [60, 80, 100, 140, 200] {
            let lines = Display.frame(rows: rows, summary: summary(), width: width, height: 20).dropLast()
            let starts = lines.map { Display.displayWidth(String($0.prefix { $0 != "[" })) }
            let ends = lines.map { Display.displayWidth(String($0.prefix { $0 != "]" })) }
            #expect(Set(starts).count == 1, "width \(width): \(starts)")
            #expect(Set(ends).count == 1, "width \(width): \(ends)")
            #expect(ends[0] - starts[0] + 1 >= Display.barMin)
            // The fixed columns are right-aligned: every row ends in the same column.
            #expect(Set(lines.map(Display.displayWidth)).count == 1)
        }
    }

    @Test func theBarFillsTheWidthLeft() {
        let row = Row(name: "file.bin", completed: 5, total: 10, bytesPerSecond: 1)
        func barWidth(_ width: Int) -> Int {
            let line = Display.frame(rows: [row], summary: summary(), width: width, height: 5)[0]
            return Display.displayWidth(String(line.prefix { $0 != "]" }))
                - Display.displayWidth(String(line.prefix { $0 != "[" })) + 1
        }
        #expect(barWidth(80) > Display.barMin)
        #expect(barWidth(100) > barWidth(80))
        #expect(barWidth(200) == Display.barMax)
        let line = Display.frame(rows: [row], summary: summary(), width: 80, height: 5)[0]
        #expect(Display.displayWidth(line) == 80)
    }

    @Test func columnsDropInAFixedOrder() {
        let row = Row(name: "file-0.bin", completed: 50, total: 200, bytesPerSecond: 10, connections: 4)
        var seen: Set<[Bool]> = []
        for width in 1...200 {
            let line = Display.frame(rows: [row], summary: summary(), width: width, height: 5)[0]
            #expect(Display.displayWidth(line) <= width)
            // In drop order: connections, bytes, speed, time left, bar, percent.
            let present = [
                line.contains("×4"), line.contains("50 B / 200 B"), line.contains("10 B/s"),
                line.contains("0:15"), line.contains("["), line.contains("25.0%"),
            ]
            for (index, has) in present.enumerated() where has {
                #expect(present[index...].allSatisfy { $0 }, "width \(width): \(line)")
            }
            seen.insert(present)
        }
        #expect(seen.count == 7) // all, then one fewer each step, down to the name alone
        #expect(Display.frame(rows: [row], summary: summary(), width: 200, height: 5)[0].hasSuffix("×4"))
        #expect(Display.frame(rows: [row], summary: summary(), width: 5, height: 5)[0] == "fi…in")
    }

    @Test func percentBytesSpeedAndTimeLeft() {
        let line = Display.frame(
            rows: [Row(name: "a.bin", completed: 50, total: 200, bytesPerSecond: 10)],
            summary: summary(), width: 100, height: 5)[0]
        #expect(line.hasSuffix("]  25.0% 50 B / 200 B 10 B/s  0:15"))
        #expect(Display.percentText(Row(name: "", completed: 999, total: 1000)) == " 99.9%")
        #expect(Display.percentText(Row(name: "", completed: 9_999, total: 10_000)) == " 99.9%")
        #expect(Display.percentText(Row(name: "", completed: 1000, total: 1000)) == "100.0%")
        #expect(Display.percentText(Row(name: "", completed: 5000, total: 1000)) == "100.0%")
        #expect(Display.percentText(Row(name: "", completed: 0, total: 0)) == "100.0%")
        #expect(Display.percentText(Row(name: "", completed: 1, total: 3)) == " 33.3%")
        let big = Row(name: "", completed: 0, total: 10 << 30, bytesPerSecond: Double(Self.mib))
        #expect(Display.timeLeft(big) == 10_240)
        #expect(
            Display.render(big, name: "big", .init(width: 100, wishes: Display.wishes([big], names: ["big"])))
                .hasSuffix("]   0.0% 0 B / 10.0 GiB 1.0 MiB/s 2:50:40"))
    }

    @Test func barShapes() {
        #expect(Display.bar(Row(name: "", completed: 0, total: 100), width: 12) == "[          ]")
        #expect(Display.bar(Row(name: "", completed: 25, total: 100), width: 12) == "[=>        ]")
        #expect(Display.bar(Row(name: "", completed: 99, total: 100), width: 12) == "[========> ]")
        #expect(Display.bar(Row(name: "", completed: 100, total: 100), width: 12) == "[==========]")
        // Unknown total: a marker that moves with the bytes, back and forth.
        #expect(Display.bar(Row(name: "", completed: 0, total: nil), width: 12) == "[<=>       ]")
        #expect(Display.bar(Row(name: "", completed: 3 * 65_536, total: nil), width: 12) == "[   <=>    ]")
        #expect(Display.bar(Row(name: "", completed: 7 * 65_536, total: nil), width: 12) == "[       <=>]")
        #expect(Display.bar(Row(name: "", completed: 9 * 65_536, total: nil), width: 12) == "[     <=>  ]")
    }

    @Test func unknownTotalShowsBytesAndSpeedButNoPercent() {
        let rows = [
            Row(name: "stream", completed: Self.mib, total: nil, bytesPerSecond: 2048),
            Row(name: "known", completed: 1, total: 4, bytesPerSecond: 1),
        ]
        let line = Display.frame(rows: rows, summary: summary(), width: 100, height: 5)[0]
        #expect(!line.contains("%"))
        #expect(line.contains("<=>"))
        #expect(line.contains(" 1.0 MiB "))
        #expect(!line.contains(" / "))
        #expect(line.contains("2.0 KiB/s"))
        #expect(line.hasSuffix("--:--"))
        #expect(Display.timeLeft(rows[0]) == nil)
    }

    @Test func zeroOrBrokenSpeed() {
        for speed in [0, -1, Double.nan, .infinity] {
            let row = Row(name: "slow", completed: 10, total: 100, bytesPerSecond: speed)
            #expect(Display.timeLeft(row) == nil)
            let line = Display.frame(rows: [row], summary: summary(bytesPerSecond: speed), width: 100, height: 5)[0]
            #expect(line.hasSuffix("]  10.0% 10 B / 100 B 0 B/s --:--"))
        }
    }

    @Test func retryingAndVerifyingReplaceSpeedAndTimeLeft() {
        let rows = [
            Row(name: "r", completed: 10, total: 100, bytesPerSecond: 7, state: .retrying(attempt: 2, inSeconds: 3)),
            Row(name: "v", completed: 100, total: 100, bytesPerSecond: 7, state: .verifying),
        ]
        let lines = Display.frame(rows: rows, summary: summary(), width: 100, height: 5)
        #expect(lines[0].hasSuffix("]  10.0%  10 B / 100 B retry 2 in 0:03"))
        #expect(lines[1].hasSuffix("] 100.0% 100 B / 100 B       verifying"))
        #expect(!lines[0].contains("B/s") && !lines[1].contains("B/s"))
        // Without the speed column only the time-left column is left for it: the shorter form.
        let narrow = Display.frame(rows: rows, summary: summary(), width: 30, height: 5)
        #expect(narrow[0].hasSuffix(" 10.0%  retry 2"), "\(narrow[0])")
        #expect(narrow[1].hasSuffix("100.0%   verify"), "\(narrow[1])")
    }

    // MARK: Summary

    @Test func summaryCountsBytesSpeedAndTime() {
        let many = summary(
            done: 1234, failed: 2, total: 10_000, running: 8, queued: 8756, bytes: 20_237_516,
            bytesPerSecond: 4.1 * Double(Self.mib), filesPerSecond: 50)
        #expect(
            Display.summaryLine(many, width: nil)
                == "[ 1234/10000 done, 2 failed, 8 running, 8756 queued ]  19.3 MiB  4.1 MiB/s  ETA 2:56")
        // Narrower: queued, running, bytes, speed, then time left go.
        #expect(
            Display.summaryLine(many, width: 80)
                == "[ 1234/10000 done, 2 failed, 8 running ]  19.3 MiB  4.1 MiB/s  ETA 2:56")
        #expect(Display.summaryLine(many, width: 60) == "[ 1234/10000 done, 2 failed ]  19.3 MiB  4.1 MiB/s  ETA 2:56")
        #expect(Display.summaryLine(many, width: 50) == "[ 1234/10000 done, 2 failed ]  4.1 MiB/s  ETA 2:56")
        #expect(Display.summaryLine(many, width: 40) == "[ 1234/10000 done, 2 failed ]  ETA 2:56")
        #expect(Display.summaryLine(many, width: 30) == "[ 1234/10000 done, 2 failed ]")
        #expect(Display.summaryLine(many, width: 25) == "1234/10000 done, 2 failed")
        #expect(Display.summaryLine(many, width: 10) == "1234/1000…")
        // The frame ends with the same line.
        #expect(Display.frame(rows: [], summary: many, width: 80, height: 24) == [Display.summaryLine(many, width: 80)])
    }

    @Test func summaryTimeLeftRule() {
        // Every size known: bytes decide, whatever the file rate says.
        #expect(
            Display.timeLeft(
                summary(
                    total: 3, running: 3, bytesPerSecond: 10 * Double(Self.mib), filesPerSecond: 100,
                    knownRemainingBytes: 100 * Self.mib)) == 10)
        // Some sizes unknown: files left over the completion rate.
        #expect(Display.timeLeft(summary(done: 85, failed: 5, total: 100, bytesPerSecond: 1e9, filesPerSecond: 2)) == 5)
        // Sizes known but nothing moving: the file rate still answers.
        #expect(Display.timeLeft(summary(done: 6, total: 10, filesPerSecond: 0.5, knownRemainingBytes: 1000)) == 8)
        // Nothing to go on.
        #expect(Display.timeLeft(summary(total: 10, bytesPerSecond: 1e6)) == nil)
        #expect(Display.summaryLine(summary(total: 10, bytesPerSecond: 1e6), width: nil).hasSuffix("ETA --:--"))
        // Nothing left.
        #expect(Display.timeLeft(summary(done: 9, failed: 1, total: 10)) == 0)
        #expect(
            Display.summaryLine(summary(done: 9, failed: 1, total: 10, running: 0), width: nil)
                == "[ 9/10 done, 1 failed, 0 running, 0 queued ]  0 B  0 B/s  ETA 0:00")
    }
}

extension String {
    func trimmingSuffix(_ character: Character) -> String {
        var text = self
        while text.last == character { text.removeLast() }
        return text
    }
}

/// The shapes the Reporter builds its values in.
@Suite(.timeLimit(.minutes(1))) struct ProgressDisplayInputTests {
    @Test func rowFromLiveProgress() {
        let row = ProgressDisplay.Row(
            name: "x", progress: HaulCore.Progress(completed: 5, total: 9, bytesPerSecond: 3, connections: 4))
        #expect(
            row
                == ProgressDisplay.Row(
                    name: "x", completed: 5, total: 9, bytesPerSecond: 3, connections: 4, state: .running))
    }

    @Test func summaryFromCounts() {
        let counts = ProgressDisplay.Counts(total: 20, done: 5, failed: 2, stopped: 3)
        let summary = ProgressDisplay.Summary(
            counts: counts, running: 4, bytes: 100, bytesPerSecond: 0, filesPerSecond: 1,
            remainingBytes: nil)
        #expect(summary.queued == 6)
        #expect(summary.filesLeft == 10)
        #expect(ProgressDisplay.timeLeft(summary) == 10)
        #expect(
            ProgressDisplay.summaryLine(summary, width: nil)
                == "[ 5/20 done, 2 failed, 3 stopped, 4 running, 6 queued ]  100 B  0 B/s  ETA 0:10")
        // Stopped downloads are not waited for.
        let stopped = ProgressDisplay.Summary(
            counts: .init(total: 4, done: 3, failed: 0, stopped: 1), running: 0, bytes: 0,
            bytesPerSecond: 0, filesPerSecond: 0, remainingBytes: nil)
        #expect(ProgressDisplay.summaryLine(stopped, width: 40) == "[ 3/4 done, 0 failed, 1 stopped ]")
        #expect(ProgressDisplay.timeLeft(stopped) == 0)
    }
}
