/// A transfer rate limit in bytes per second (`--limit-rate 2M`). Always positive: "no limit" is
/// the absence of a `ByteRate` (`nil`), never zero.
public struct ByteRate: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The limit, in bytes per second; always positive.
    public var bytesPerSecond: Int64

    /// A limit of `bytesPerSecond`, or nil (no limit) for anything under one byte per second.
    public static func limit(_ bytesPerSecond: Int64) -> ByteRate? {
        bytesPerSecond > 0 ? ByteRate(bytesPerSecond: bytesPerSecond) : nil
    }

    /// A limit of `bytesPerSecond`, which must be positive: anything else traps. `limit(_:)` takes
    /// any value, and answers nil for one under 1.
    public init(bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0, "a ByteRate must be positive; use nil for no limit")
        self.bytesPerSecond = bytesPerSecond
    }

    /// Parses the spellings curl and wget accept: a number of bytes per second (`500000`),
    /// optionally with a fraction (`1.5M`) and a binary unit `K`, `M` or `G` in either case
    /// (1024, 1024², 1024³), optionally followed by `B` (`500KB`; `KiB` is accepted too). A
    /// fraction is rounded down to whole bytes. No spaces, no sign, no `/s`.
    ///
    /// Throws a `.usage` error naming the input when it is empty, malformed, too large for
    /// `Int64`, or not at least one byte per second (`0`, `-5`, `0.0001K`): aria2 reads `0` as
    /// "unlimited", but here no limit is spelt by leaving the option out.
    public init(parsing text: String) throws(HaulError) {
        let hint = "use bytes per second such as 500000, 500K, 2M or 1.5M"
        guard !text.isEmpty else {
            throw HaulError(.usage, "rate limit '' is empty; \(hint)")
        }
        let bytes = Array(text.utf8)
        var index = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { index += 1 }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        // Whole part: at least one digit; overflow is noted, and reported once the syntax is known good.
        var whole: Int64 = 0
        var overflow = false
        let wholeStart = index
        while index < bytes.count, isDigit(bytes[index]) {
            let (times10, o1) = whole.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
            overflow = overflow || o1 || o2
            whole = sum
            index += 1
        }
        guard index > wholeStart else {
            throw HaulError(.usage, "invalid rate limit '\(text)'; \(hint)")
        }
        // Fraction: a dot and at least one digit.
        var fraction: [Int64] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < bytes.count, isDigit(bytes[index]) {
                fraction.append(Int64(bytes[index] - UInt8(ascii: "0")))
                index += 1
            }
            guard !fraction.isEmpty else {
                throw HaulError(.usage, "invalid rate limit '\(text)'; \(hint)")
            }
        }
        let suffix = String(decoding: bytes[index...], as: UTF8.self).lowercased()
        let unit: Int64
        switch suffix {
        case "", "b": unit = 1
        case "k", "kb", "kib": unit = 1 << 10
        case "m", "mb", "mib": unit = 1 << 20
        case "g", "gb", "gib": unit = 1 << 30
        default: throw HaulError(.usage, "invalid rate limit '\(text)'; \(hint)")
        }
        // floor(0.d1d2…dn × unit), exactly, for any number of digits: working from the last digit,
        // floor((d × unit + floor(rest)) / 10) == floor((d × unit + rest) / 10), and every partial
        // value stays below `unit`, so nothing overflows.
        let fractionBytes = fraction.reversed().reduce(Int64(0)) { partial, digit in (digit * unit + partial) / 10 }
        let (scaled, o1) = whole.multipliedReportingOverflow(by: unit)
        let (total, o2) = scaled.addingReportingOverflow(fractionBytes)
        if overflow || o1 || o2 {
            throw HaulError(.usage, "rate limit '\(text)' is too large")
        }
        guard !negative, total > 0 else {
            throw HaulError(
                .usage, "rate limit '\(text)' must be at least 1 byte per second (leave the option out for no limit)")
        }
        self.init(bytesPerSecond: total)
    }

    /// `2 MiB/s`, `1.5 MiB/s`, `488.28 KiB/s`, `500 B/s`: the largest binary unit the rate
    /// reaches, at most two decimals (rounded), trailing zeros dropped.
    public var description: String {
        for (size, name) in [(Int64(1) << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] where bytesPerSecond >= size {
            var whole = bytesPerSecond / size
            var hundredths = (bytesPerSecond % size * 100 + size / 2) / size
            if hundredths == 100 {
                whole += 1
                hundredths = 0
            }
            guard hundredths > 0 else { return "\(whole) \(name)/s" }
            var decimals = hundredths < 10 ? "0\(hundredths)" : "\(hundredths)"
            if decimals.hasSuffix("0") { decimals.removeLast() }
            return "\(whole).\(decimals) \(name)/s"
        }
        return "\(bytesPerSecond) B/s"
    }

    private enum CodingKeys: String, CodingKey {
        case bytesPerSecond
    }

    /// Decodes `bytesPerSecond`; a value under 1 throws a `DecodingError` (no limit is stored as no
    /// `ByteRate`, never as zero).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let value = try container.decode(Int64.self, forKey: .bytesPerSecond)
        guard value > 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .bytesPerSecond, in: container,
                debugDescription: "a rate limit must be positive, got \(value)")
        }
        self.bytesPerSecond = value
    }
}
