/// A parsed `Content-Range` header: `bytes 100-199/1000`, `bytes 100-199/*` or `bytes */1000`.
public struct ContentRange: Hashable, Sendable {
    /// The bytes the body carries; nil for the unsatisfied form `*/N`.
    public var range: ClosedRange<Int64>?
    /// The whole entity's length; nil when the server wrote `*`.
    public var total: Int64?

    /// A content range with these parts: nil `range` for the unsatisfied form, nil `total` for an
    /// unknown length.
    public init(range: ClosedRange<Int64>?, total: Int64?) {
        self.range = range
        self.total = total
    }

    /// Parses the field's value; nil when it is not a `bytes` range, a number is malformed, the range
    /// ends at or past `total`, or both parts are `*`.
    public init?(parsing header: String) {
        let text = header.trimmingSpaces()
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst("bytes ".count).trimmingSpaces()
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let value = Int64(halves[1]), value >= 0 else { return nil }
            total = value
        }
        if halves[0] == "*" {
            guard total != nil else { return nil }
            range = nil
        } else {
            let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
                first >= 0, last >= first
            else { return nil }
            if let total, last >= total { return nil }
            range = first...last
        }
    }
}
