/// A user name and password for HTTP Basic authentication, to an origin server (`user:pass@` in
/// the URL, `--user`, netrc) or to a proxy.
///
/// Secrets must never reach a terminal, a log, `--json`, the store or the daemon's API by
/// accident: `description`, `debugDescription` and the mirror (what `print`, string
/// interpolation, `dump` and `String(reflecting:)` of any value holding one use) all hide the
/// password. Deliberately not `Codable`, so no type holding one stores it by accident: the stores
/// keep it as `StoredCredentials` (`StoredForms.swift`), and only a store that keeps credentials.
public struct Credentials: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable
{
    /// The user name; unlike the password, printed by `description`.
    public var user: String
    /// The password, possibly empty; never printed (`description` shows `***`).
    public var password: String

    /// Credentials from a user name and a password, taken as given (nothing is decoded).
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

    /// A URL's userinfo, `user[:password]`, each percent-decoded; nil for an empty one
    /// (`http://@host/`). Origin URLs and proxy URLs alike.
    public init?(userinfo: Substring) {
        guard !userinfo.isEmpty else { return nil }
        let colon = userinfo.firstIndex(of: ":")
        let user = userinfo[..<(colon ?? userinfo.endIndex)]
        let password = colon.map { userinfo[userinfo.index(after: $0)...] } ?? ""
        self.init(
            user: String(decoding: PercentDecoding.decode(user), as: UTF8.self),
            password: String(decoding: PercentDecoding.decode(password), as: UTF8.self))
    }

    /// `user:***`: the password hidden.
    public var description: String { "\(user):***" }
    /// `Credentials(user:***)`: the password hidden.
    public var debugDescription: String { "Credentials(\(user):***)" }
    /// The user name, and `***` for the password, so `dump` and debuggers do not show it.
    public var customMirror: Mirror { Mirror(self, children: ["user": user, "password": "***"]) }
}
