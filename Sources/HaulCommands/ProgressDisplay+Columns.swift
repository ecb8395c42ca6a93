/// The texts of one row's columns: the bar, percent, bytes, speed, time left and a retry's or
/// verification's state. `render` lays them out (see the type's comment for the rules).
extension ProgressDisplay {
    /// `[=====>    ]` for a known total; `[   <=>    ]` for an unknown one, the marker placed by
    /// the bytes received (one step per 64 KiB, back and forth).
    static func bar(_ row: Row, width: Int) -> String {
        guard width >= 2 else { return String(repeating: " ", count: max(0, width)) }
        let inner = width - 2
        if let fraction = fraction(row) {
            let filled = min(inner, Int((fraction * Double(inner)).rounded(.down)))
            let body: String
            if filled == inner {
                body = String(repeating: "=", count: inner)
            } else if filled > 0 {
                body = String(repeating: "=", count: filled - 1) + ">" + String(repeating: " ", count: inner - filled)
            } else {
                body = String(repeating: " ", count: inner)
            }
            return "[" + body + "]"
        }
        guard inner >= 3 else { return "[" + String(repeating: " ", count: inner) + "]" }
        let travel = inner - 3
        let step = Int(max(0, row.completed) / 65_536)
        let position: Int
        if travel == 0 {
            position = 0
        } else {
            let phase = step % (2 * travel)
            position = phase <= travel ? phase : 2 * travel - phase
        }
        return "[" + String(repeating: " ", count: position) + "<=>" + String(repeating: " ", count: travel - position)
            + "]"
    }

    /// 0...1 when the total is known (a total of 0 is complete).
    static func fraction(_ row: Row) -> Double? {
        guard let total = row.total, total >= 0 else { return nil }
        guard total > 0 else { return 1 }
        return min(1, max(0, Double(row.completed) / Double(total)))
    }

    /// ` 42.0%`, rounded down so an unfinished download never shows 100.0%.
    static func percentText(_ row: Row) -> String? {
        guard let fraction = fraction(row) else { return nil }
        let tenths = (fraction * 1000).rounded(.down)
        return NumberText.fixed(tenths / 10, places: 1, width: 5) + "%"
    }

    static func bytesText(_ row: Row) -> String {
        let completed = ByteFormatting.size(max(0, row.completed))
        guard let total = row.total, total >= 0 else { return completed }
        return "\(completed) / \(ByteFormatting.size(total))"
    }

    /// Seconds left at the current speed, when the total is known and bytes are moving.
    static func timeLeft(_ row: Row) -> Double? {
        guard let total = row.total, total >= 0 else { return nil }
        let rate = safeRate(row.bytesPerSecond)
        guard rate > 0 else { return nil }
        return Double(max(0, total - max(0, row.completed))) / rate
    }

    static func speedText(_ row: Row) -> String {
        ByteFormatting.speed(safeRate(row.bytesPerSecond))
    }

    static func timeLeftText(_ row: Row) -> String {
        timeLeft(row).map(ByteFormatting.duration) ?? unknownTime
    }

    /// Longest first; the frame shows the first that fits.
    static func stateTexts(_ state: Row.State) -> [String] {
        switch state {
        case .running: return ["running"]
        case .verifying: return ["verifying", "verify"]
        case .retrying(let attempt, let seconds):
            return ["retry \(attempt) in \(ByteFormatting.duration(max(0, seconds)))", "retry \(attempt)", "retry"]
        }
    }
}
