/// A download's identity: short, printable and stable across restarts, so people can type it
/// (`haul pause 3f9a...`) and the store can key on it.
public struct DownloadID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// A fresh random identifier: 16 lowercase hex digits.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> DownloadID {
        let value = UInt64.random(in: .min ... .max, using: &generator)
        let hex = String(value, radix: 16)
        return DownloadID(rawValue: String(repeating: "0", count: 16 - hex.count) + hex)
    }

    public static func random() -> DownloadID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public var description: String { rawValue }
    public static func < (lhs: DownloadID, rhs: DownloadID) -> Bool { lhs.rawValue < rhs.rawValue }
}
