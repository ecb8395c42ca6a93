import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The text of `haul get`'s progress display, as pure functions of plain values: no terminal,
/// no clock, no escape codes (the Reporter adds the cursor movement). Sizes, speeds and times
/// come from `ByteFormatting`.
///
/// A frame (`frame(rows:summary:width:height:)`), top to bottom:
/// - the running downloads, in the order given (the Reporter passes start order), one line each:
///   `name  [=====>    ]  42.0%  12.3 MiB / 30.0 MiB  1.2 MiB/s  0:42  ×4`.
///   Names are cleaned (control characters, line and paragraph separators and bidirectional
///   overrides become `?`, so a name can never move the cursor; characters that take no cell
///   on their own are dropped), cut in the middle with `…` when too long and padded, so every
///   bar starts at the same column. The other columns are right-aligned, each as wide as its
///   widest text in this frame (percent always 6; bytes at most 23, speed 12, time left 8).
///   A retrying or verifying download shows `retry 2 in 0:03` or `verifying` where speed and
///   time left would be. An unknown total shows bytes and speed, a blank percent, `--:--` for
///   time left and a `<=>` marker in the bar whose position follows the bytes received (so a
///   stalled download's marker stands still). The connections column (`×4`) appears only when
///   some shown download uses more than one.
/// - when not all fit, `… and N more running`, N counting the rows not shown;
/// - the summary line (`summaryLine(_:width:)`).
///
/// Height: the frame has at most `height - 1` lines, because the Reporter ends the frame with a
/// newline; a frame of `height` lines would scroll its first line beyond the reach of the
/// cursor-up that erases it. So: all rows when `rows.count <= height - 2`, otherwise the first
/// `height - 3` rows and the "more" line. Never more than `height - 2` rows.
///
/// Width: no line is wider than `width` cells. The name column is as wide as the longest shown
/// name, within 12...40 cells (less when the names are shorter); the bar gets 10...50 cells
/// (brackets included): after the minimums, spare cells go to the name up to 24, the bar up to
/// 20, the name up to its wish, then the bar up to 50. When even the minimums do not fit, whole
/// columns go, always in this order: connections, bytes, speed, time left, bar, percent; what
/// is left is the name alone, cut to the width. Lines never wrap.
///
/// Cell widths (`displayWidth`): per Unicode scalar, 1, except 0 for combining marks (Mn, Me)
/// and format characters (Cf, save the soft hyphen), 2 for East Asian Wide and Fullwidth ranges
/// and emoji with emoji presentation, and 1 for U+FE0F (the variation selector that turns a
/// text symbol such as ❤ into a two-cell emoji). Summing per scalar over-counts emoji sequences
/// (👨‍👩‍👧 counts 6, flags 4), which shortens the line rather than overflowing it; East Asian
/// Ambiguous characters count 1.
///
/// Time left, summary (`timeLeft(_: Summary)`): 0 when no file is left; from bytes
/// (`knownRemainingBytes / bytesPerSecond`) when the size of every unfinished download is known
/// (`knownRemainingBytes` is non-nil) and bytes are moving: few large files; otherwise from
/// files (`files left / filesPerSecond`): many small files, most still queued with unknown
/// sizes; otherwise unknown (`--:--`). Files left = total - done - failed - stopped.
enum ProgressDisplay {
    /// One running download.
    struct Row: Hashable, Sendable {
        enum State: Hashable, Sendable {
            case running
            /// Waiting `inSeconds` before attempt number `attempt`.
            case retrying(attempt: Int, inSeconds: Double)
            /// Checking the digest of the finished bytes.
            case verifying
        }

        var name: String
        var completed: Int64
        /// Bytes the download will have, once known.
        var total: Int64?
        var bytesPerSecond: Double
        /// Connections transferring right now.
        var connections: Int
        var state: State

        init(
            name: String, completed: Int64, total: Int64?, bytesPerSecond: Double = 0,
            connections: Int = 1, state: State = .running
        ) {
            self.name = name
            self.completed = completed
            self.total = total
            self.bytesPerSecond = bytesPerSecond
            self.connections = connections
            self.state = state
        }

        /// A running download from its live figures.
        init(name: String, progress: HaulCore.Progress, state: State = .running) {
            self.init(
                name: name, completed: progress.completed, total: progress.total,
                bytesPerSecond: progress.bytesPerSecond, connections: progress.connections, state: state)
        }
    }

    /// How many downloads the command has, and how each ended; the Reporter keeps these.
    struct Counts: Hashable, Sendable {
        var total = 0
        var done = 0
        var failed = 0
        /// Paused, interrupted or removed: not done, not failed, not coming back in this run.
        var stopped = 0
    }

    /// The whole command.
    struct Summary: Hashable, Sendable {
        var done: Int
        var failed: Int
        /// Every download of the command: done, failed, stopped, running and queued.
        var total: Int
        /// Paused, interrupted or removed; shown only when there are some.
        var stopped: Int
        var running: Int
        var queued: Int
        /// Bytes transferred so far, all files.
        var bytes: Int64
        var bytesPerSecond: Double
        /// Recent completion rate.
        var filesPerSecond: Double
        /// Bytes still to fetch, only when the size of every unfinished download is known;
        /// nil as soon as one is not (say, a queued download not yet asked for).
        var knownRemainingBytes: Int64?

        init(
            done: Int, failed: Int, total: Int, stopped: Int = 0, running: Int, queued: Int, bytes: Int64,
            bytesPerSecond: Double, filesPerSecond: Double, knownRemainingBytes: Int64?
        ) {
            self.done = done
            self.failed = failed
            self.total = total
            self.stopped = stopped
            self.running = running
            self.queued = queued
            self.bytes = bytes
            self.bytesPerSecond = bytesPerSecond
            self.filesPerSecond = filesPerSecond
            self.knownRemainingBytes = knownRemainingBytes
        }

        /// From the Reporter's counts; queued is what is neither finished nor running.
        init(
            counts: Counts, running: Int, bytes: Int64, bytesPerSecond: Double, filesPerSecond: Double,
            remainingBytes: Int64?
        ) {
            self.init(
                done: counts.done, failed: counts.failed, total: counts.total, stopped: counts.stopped,
                running: running, queued: max(0, counts.total - counts.done - counts.failed - counts.stopped - running),
                bytes: bytes, bytesPerSecond: bytesPerSecond, filesPerSecond: filesPerSecond,
                knownRemainingBytes: remainingBytes)
        }

        /// Downloads neither done, failed nor stopped.
        var filesLeft: Int { max(0, total - done - failed - stopped) }
    }

    // MARK: Layout constants

    static let nameMin = 12
    static let namePreferred = 24
    static let nameMax = 40
    static let barMin = 10
    static let barPreferred = 20
    static let barMax = 50
    static let percentWidth = 6 // "100.0%"
    static let bytesWidth = 23 // "1023.9 MiB / 1023.9 MiB"
    static let speedWidth = 12 // "1023.9 KiB/s"
    static let etaWidth = 8 // "99:59:59"
    static let unknownTime = "--:--"

    // MARK: Frame

    /// The lines of one terminal frame, top to bottom, without newlines or escape codes.
    static func frame(rows: [Row], summary: Summary, width: Int, height: Int) -> [String] {
        guard width > 0 else { return [] }
        let lines = max(1, height - 1)
        let slots = lines - 1 // for rows and the "more" line
        let shownCount = rows.count <= slots ? rows.count : max(0, slots - 1)
        let shown = rows.prefix(shownCount)
        // With no slot at all (height 2 or less) the summary alone, which counts the running.
        let hidden = slots > 0 ? rows.count - shownCount : 0

        var frame: [String] = []
        if !shown.isEmpty {
            let names = shown.map { sanitized($0.name) }
            let layout = Layout(width: width, wishes: wishes(shown, names: names))
            for (row, name) in zip(shown, names) {
                frame.append(render(row, name: name, layout))
            }
        }
        if hidden > 0 {
            frame.append(
                fitted(["… and \(hidden) more running", "… and \(hidden) more", "… +\(hidden)"], width: width))
        }
        frame.append(summaryLine(summary, width: width))
        return frame
    }

    /// The width each column would like for these rows: as wide as its widest text, within the
    /// constants above (bytes, speed and time left are at least 5, `0 B/s` and `--:--`), and wide
    /// enough together for a retry's or verification's text when they can be.
    static func wishes(_ rows: some Collection<Row>, names: [String]) -> Layout {
        var wishes = Layout()
        wishes.name = max(1, names.map(displayWidth).max() ?? 1)
        wishes.percent = percentWidth
        wishes.bytes = min(bytesWidth, max(5, rows.map { displayWidth(bytesText($0)) }.max() ?? 0))
        let moving = rows.filter { $0.state == .running }
        wishes.speed = min(speedWidth, max(5, moving.map { displayWidth(speedText($0)) }.max() ?? 0))
        wishes.eta = min(etaWidth, max(5, moving.map { displayWidth(timeLeftText($0)) }.max() ?? 0))
        let stateWish = rows.map { displayWidth(stateTexts($0.state)[0]) }.max() ?? 0
        if stateWish > wishes.stateSpan { wishes.eta = min(etaWidth, wishes.eta + stateWish - wishes.stateSpan) }
        if stateWish > wishes.stateSpan { wishes.speed = min(speedWidth, wishes.speed + stateWish - wishes.stateSpan) }
        let maxConnections = rows.map(\.connections).max() ?? 1
        wishes.connections = maxConnections > 1 ? displayWidth("×\(maxConnections)") : 0
        return wishes
    }

    /// The column widths of one frame; 0 for a column left out.
    struct Layout: Equatable {
        var name = 0
        var bar = 0
        var percent = 0
        var bytes = 0
        var speed = 0
        var eta = 0
        var connections = 0

        init() {}

        /// The columns wished for (`bar` is ignored), fitted to `width`.
        init(width: Int, wishes: Layout) {
            self = wishes
            let wish = min(max(1, wishes.name), ProgressDisplay.nameMax)
            let minName = min(wish, ProgressDisplay.nameMin)
            bar = ProgressDisplay.barMin
            // Drop whole columns, in a fixed order, until the minimums fit.
            let drops: [WritableKeyPath<Layout, Int>] = [\.connections, \.bytes, \.speed, \.eta, \.bar, \.percent]
            var next = 0
            while minName + fixedWidth > width, next < drops.count {
                self[keyPath: drops[next]] = 0
                next += 1
            }
            guard minName + fixedWidth <= width else {
                name = max(0, min(wish, width))
                return
            }
            // Spare cells: the name to 24, the bar to 20, the name to its wish, the bar to 50.
            var spare = width - minName - fixedWidth
            name = minName
            func grow(_ column: WritableKeyPath<Layout, Int>, to limit: Int) {
                guard self[keyPath: column] > 0 else { return }
                let cells = max(0, min(spare, limit - self[keyPath: column]))
                self[keyPath: column] += cells
                spare -= cells
            }
            grow(\.name, to: min(wish, ProgressDisplay.namePreferred))
            grow(\.bar, to: ProgressDisplay.barPreferred)
            grow(\.name, to: wish)
            grow(\.bar, to: ProgressDisplay.barMax)
        }

        /// Every column but the name, each with the space before it.
        var fixedWidth: Int {
            [bar, percent, bytes, speed, eta, connections].filter { $0 > 0 }.reduce(0) { $0 + $1 + 1 }
        }

        /// The span of the speed and time-left columns, where a state's text goes.
        var stateSpan: Int {
            speed > 0 && eta > 0 ? speed + 1 + eta : speed + eta
        }
    }

    static func render(_ row: Row, name: String, _ layout: Layout) -> String {
        var parts = [padded(truncatedMiddle(name, to: layout.name), to: layout.name)]
        if layout.bar > 0 { parts.append(bar(row, width: layout.bar)) }
        if layout.percent > 0 { parts.append(rightAligned(percentText(row) ?? "", layout.percent)) }
        if layout.bytes > 0 { parts.append(rightAligned(bytesText(row), layout.bytes)) }
        switch row.state {
        case .running:
            if layout.speed > 0 { parts.append(rightAligned(speedText(row), layout.speed)) }
            if layout.eta > 0 { parts.append(rightAligned(timeLeftText(row), layout.eta)) }
        case .retrying, .verifying:
            if layout.stateSpan > 0 {
                parts.append(rightAligned(fitted(stateTexts(row.state), width: layout.stateSpan), layout.stateSpan))
            }
        }
        if layout.connections > 0 {
            parts.append(rightAligned(row.connections > 1 ? "×\(row.connections)" : "", layout.connections))
        }
        return trimmingTrailingSpaces(parts.joined(separator: " "))
    }

    // MARK: Summary

    /// `[ 1234/10000 done, 2 failed, 8 running, 8756 queued ]  19.3 MiB  4.1 MiB/s  ETA 0:42`:
    /// the periodic line when stderr is not a terminal, and the last line of a frame. With a
    /// width, parts go in this order until it fits: queued, running, bytes, speed, time left;
    /// then the counts shorten to `1234/10000 done, 2 failed` and are cut with `…`. `, 3 stopped`
    /// follows `failed` when some downloads were paused, interrupted or removed.
    static func summaryLine(_ summary: Summary, width: Int?) -> String {
        let stopped = summary.stopped > 0 ? ", \(summary.stopped) stopped" : ""
        let counts = "\(summary.done)/\(summary.total) done, \(summary.failed) failed\(stopped)"
        let bytes = ByteFormatting.size(max(0, summary.bytes))
        let speed = ByteFormatting.speed(safeRate(summary.bytesPerSecond))
        let eta = "ETA " + (timeLeft(summary).map(ByteFormatting.duration) ?? unknownTime)
        let candidates = [
            "[ \(counts), \(summary.running) running, \(summary.queued) queued ]  \(bytes)  \(speed)  \(eta)",
            "[ \(counts), \(summary.running) running ]  \(bytes)  \(speed)  \(eta)",
            "[ \(counts) ]  \(bytes)  \(speed)  \(eta)",
            "[ \(counts) ]  \(speed)  \(eta)",
            "[ \(counts) ]  \(eta)",
            "[ \(counts) ]",
            counts,
        ]
        guard let width else { return candidates[0] }
        return fitted(candidates, width: width)
    }

    /// Seconds until every file is done or failed; see the type's comment for the rule.
    static func timeLeft(_ summary: Summary) -> Double? {
        let filesLeft = summary.filesLeft
        if filesLeft == 0 { return 0 }
        if let remaining = summary.knownRemainingBytes, safeRate(summary.bytesPerSecond) > 0 {
            return Double(max(0, remaining)) / safeRate(summary.bytesPerSecond)
        }
        if safeRate(summary.filesPerSecond) > 0 {
            return Double(filesLeft) / safeRate(summary.filesPerSecond)
        }
        return nil
    }

    /// A rate `ByteFormatting` can take: not NaN, not infinite (it converts to Int64), not negative.
    static func safeRate(_ rate: Double) -> Double {
        rate.isFinite && rate > 0 ? min(rate, 1e15) : 0
    }
}
