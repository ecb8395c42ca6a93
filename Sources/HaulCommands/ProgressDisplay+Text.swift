// What a terminal cell holds: text made safe to print, its display width (East Asian wide
// characters take two cells), and fitting it to a column.
extension ProgressDisplay {
    /// The name with everything that could move the cursor or reorder the line replaced by `?`
    /// (C0 and C1 controls, DEL, line and paragraph separators, bidirectional controls), and
    /// characters that take no cell on their own (a lone combining mark, a zero-width space)
    /// dropped, so every character left takes at least one cell.
    static func sanitized(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isUnsafe(scalar) ? "?" : scalar)
        }
        return String(String(scalars).filter { characterWidth($0) > 0 })
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: break
        }
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Terminal cells `text` takes; see the type's comment for the rule.
    static func displayWidth(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + scalarWidth($1) }
    }

    static func characterWidth(_ character: Character) -> Int {
        character.unicodeScalars.reduce(0) { $0 + scalarWidth($1) }
    }

    static func scalarWidth(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        if value == 0xFE0F || value == 0x00AD { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control: return 0
        default: break
        }
        if scalar.properties.isEmojiPresentation || isEastAsianWide(value) { return 2 }
        return 1
    }

    static func isEastAsianWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
            0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF,
            0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4,
            0x17000...0x18AFF, 0x1B000...0x1B2FF, 0x1F300...0x1F64F, 0x1F900...0x1F9FF,
            0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// `text` cut in the middle with `…` to at most `width` cells, whole characters only; the
    /// tail (where a file's extension is) gets the odd cell.
    static func truncatedMiddle(_ text: String, to width: Int) -> String {
        guard displayWidth(text) > width else { return text }
        guard width > 1 else { return width == 1 ? "…" : "" }
        let characters = Array(text)
        let budget = width - 1
        var head = ""
        var headWidth = 0
        for character in characters {
            let cells = characterWidth(character)
            if headWidth + cells > budget / 2 { break }
            head.append(character)
            headWidth += cells
        }
        var tail: [Character] = []
        var tailWidth = 0
        for character in characters.reversed() {
            let cells = characterWidth(character)
            if tailWidth + cells > budget - headWidth { break }
            tail.append(character)
            tailWidth += cells
        }
        return head + "…" + String(tail.reversed())
    }

    /// `text` cut at the end with `…` to at most `width` cells.
    static func truncatedEnd(_ text: String, to width: Int) -> String {
        guard displayWidth(text) > width else { return text }
        guard width > 1 else { return width == 1 ? "…" : "" }
        var result = ""
        var used = 0
        for character in text {
            let cells = characterWidth(character)
            if used + cells > width - 1 { break }
            result.append(character)
            used += cells
        }
        return result + "…"
    }

    /// The first candidate that fits in `width`, else the last one cut to it.
    static func fitted(_ candidates: [String], width: Int) -> String {
        candidates.first { displayWidth($0) <= width } ?? truncatedEnd(candidates.last ?? "", to: width)
    }

    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - displayWidth(text)))
    }

    static func rightAligned(_ text: String, _ width: Int) -> String {
        let text = truncatedEnd(text, to: width)
        return String(repeating: " ", count: max(0, width - displayWidth(text))) + text
    }

    static func trimmingTrailingSpaces(_ text: String) -> String {
        var text = text
        while text.last == " " { text.removeLast() }
        return text
    }
}
