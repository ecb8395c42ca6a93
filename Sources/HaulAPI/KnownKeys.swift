import HaulCore

/// A request body whose keys are checked against the ones it reads before it is decoded: a key it
/// does not know (a typo such as `"pasued"`) is refused by name, never dropped, so an add meant
/// to wait does not start.
public protocol KnownKeys: Decodable {
    /// Every key the request reads.
    static var knownKeys: [String] { get }
}

/// `T` decoded from a JSON object whose every key is one of `T.knownKeys`; any other is a
/// `bad-request` naming it (and, in an array, the element's index).
public struct Checked<T: KnownKeys>: Decodable {
    public var value: T

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let unknown = container.allKeys.map(\.stringValue).filter { !T.knownKeys.contains($0) }.sorted()
        if !unknown.isEmpty {
            let place = container.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined()
            let names = unknown.map { "'\($0.prefix(40))'" }.joined(separator: ", ")
            throw HaulError(
                .badRequest,
                (place.isEmpty ? "" : place + ": ") + "unknown key\(unknown.count == 1 ? "" : "s") \(names) "
                    + "(known: \(T.knownKeys.joined(separator: ", ")))")
        }
        value = try T(from: decoder)
    }

    /// Any key of a JSON object.
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension AddRequest: KnownKeys {
    /// `referer` and `userAgent` are the browser's, taken as aria2's `addUri` takes them.
    public static let knownKeys = [
        "url", "directory", "fileName", "priority", "checksum", "headers", "connections", "maxBytesPerSecond",
        "mirrors", "paused", "position", "referer", "userAgent", "sequential",
    ]
}
