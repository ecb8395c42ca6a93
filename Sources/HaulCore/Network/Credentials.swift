/// A user name and password for HTTP Basic authentication, to an origin server (`user:pass@` in
/// the URL, `--user`, netrc) or to a proxy.
///
/// Secrets must never reach a terminal, a log, `--json`, the store or the daemon's API by
/// accident: `description`, `debugDescription` and the mirror (what `print`, string
/// interpolation, `dump` and `String(reflecting:)` of any value holding one use) all hide the
/// password. Deliberately not `Codable`: whoever stores one decides how.
public struct Credentials: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// `USER:PASSWORD` as curl's `--user` takes it: split at the first colon, so the password may
    /// contain colons (the user name cannot). Without a colon there is no password, and haul has
    /// no prompt to ask for one: a usage error.
    public init(userOption text: String) throws(HaulError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw HaulError(.usage, "--user needs USER:PASSWORD (haul cannot prompt for a password)")
        }
        let user = String(text[..<colon])
        guard !user.isEmpty else { throw HaulError(.usage, "--user needs a user name before the colon") }
        self.init(user: user, password: String(text[text.index(after: colon)...]))
    }

    /// The value of an `Authorization` (or `Proxy-Authorization`) header: `Basic` and the
    /// base64 of `user:password` in UTF-8 (RFC 7617).
    public var basicAuthorization: String {
        "Basic " + Base64.encode(Array("\(user):\(password)".utf8))
    }

    /// A URL's userinfo, `user[:password]`, each percent-decoded; nil for an empty one
    /// (`http://@host/`). Origin URLs and proxy URLs alike.
    public init?(userinfo: Substring) {
        guard !userinfo.isEmpty else { return nil }
        let colon = userinfo.firstIndex(of: ":")
        let user = userinfo[..<(colon ?? userinfo.endIndex)]
        let password = colon.map { userinfo[userinfo.index(after: $0)...] } ?? ""
        self.init(user: String(decoding: PercentDecoding.decode(user), as: UTF8.self),
                  password: String(decoding: PercentDecoding.decode(password), as: UTF8.self))
    }

    /// `user:password` with `%` and `:` escaped in each: how a private store keeps them.
    public var storedForm: String {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: ":", with: "%3A")
        }
        return escaped(user) + ":" + escaped(password)
    }

    /// Reads `storedForm`.
    public init?(storedForm text: String) {
        let halves = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        func unescaped(_ text: Substring) -> String {
            String(text).replacingOccurrences(of: "%3A", with: ":").replacingOccurrences(of: "%25", with: "%")
        }
        self.init(user: unescaped(halves[0]), password: unescaped(halves[1]))
    }

    public var description: String { "\(user):***" }
    public var debugDescription: String { "Credentials(\(user):***)" }
    public var customMirror: Mirror { Mirror(self, children: ["user": user, "password": "***"]) }
}

/// Standard base64 with padding (RFC 4648 §4); HaulCore has no Foundation.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index]
            let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
            let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0f) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3f)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
