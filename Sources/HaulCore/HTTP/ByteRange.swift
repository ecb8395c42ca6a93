/// An inclusive byte range as HTTP writes it (`bytes=A-B`, `bytes=A-`), the part of a file a
/// user asked for with `--range`.
public struct ByteRange: Hashable, Codable, Sendable, CustomStringConvertible {
    /// First byte wanted.
    public var start: Int64
    /// Last byte wanted, inclusive; nil means "to the end of the file".
    public var end: Int64?

    /// Bytes `start` through `end`, or to the end of the file when `end` is nil. Unlike
    /// `init(parsing:)`, it does not check that `start` is not negative or past `end`.
    public init(start: Int64, end: Int64? = nil) {
        self.start = start
        self.end = end
    }

    /// Parses `A-B` or `A-` (what `--range` takes), optionally prefixed with `bytes=`.
    public init?(parsing text: String) {
        var spec = Substring(text.trimmingSpaces())
        if spec.hasPrefix("bytes=") { spec = spec.dropFirst("bytes=".count) }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int64(parts[0]), start >= 0 else { return nil }
        if parts[1].isEmpty {
            self.init(start: start)
        } else {
            guard let end = Int64(parts[1]), end >= start else { return nil }
            self.init(start: start, end: end)
        }
    }

    /// Number of bytes, when the end is known.
    public var count: Int64? { end.map { $0 - start + 1 } }

    /// `A-B` or `A-`, the form `--range` takes; the `Range` field sends it after `bytes=`.
    public var description: String { "\(start)-\(end.map(String.init) ?? "")" }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
