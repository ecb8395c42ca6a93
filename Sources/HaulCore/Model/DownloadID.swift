/// A download's identity: short, printable and stable across restarts, so people can type it
/// (`haul pause 3f9a...`) and the store can key on it.
public struct DownloadID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The identifier's text, as printed, typed and stored. Those `random()` makes are 16
    /// lowercase hex digits.
    public var rawValue: String

    /// Wraps `rawValue` as it is, without checking its form (an id typed by a user or read from a
    /// store).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A fresh random identifier: 16 lowercase hex digits.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> DownloadID {
        let value = UInt64.random(in: .min ... .max, using: &generator)
        let hex = String(value, radix: 16)
        return DownloadID(rawValue: String(repeating: "0", count: 16 - hex.count) + hex)
    }

    /// A fresh random identifier from the system's random number generator.
    public static func random() -> DownloadID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// The raw value, so an id prints as users type it.
    public var description: String { rawValue }
    /// Compares the raw values as strings: the last tie-breaker of queue order (`QueueOrder`).
    public static func < (lhs: DownloadID, rhs: DownloadID) -> Bool { lhs.rawValue < rhs.rawValue }
}
