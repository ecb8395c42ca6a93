/// Text work haul once took from Foundation, written without it: the binary links only
/// FoundationEssentials, since all of Foundation brings 37 MB of internationalization data.
extension StringProtocol {
    /// Without the characters `isTrimmed` picks at either end (whitespace and newlines unless
    /// told otherwise), as Foundation's `trimmingCharacters(in:)`.
    public func trimmed(where isTrimmed: (Character) -> Bool = \.isWhitespace) -> SubSequence {
        guard let first = firstIndex(where: { !isTrimmed($0) }) else { return self[endIndex...] }
        let last = lastIndex(where: { !isTrimmed($0) }) ?? first
        return self[first...last]
    }
}
