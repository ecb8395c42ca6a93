/// A `--store` value: `sqlite` (the default, under the state directory) or a PostgreSQL URL,
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
public enum StoreLocation: Sendable, Equatable {
    /// The SQLite database under the state directory, for this host alone.
    case sqlite
    /// A PostgreSQL database the hosts of a fleet share.
    case postgres(PostgresLocation)

    /// Parses a `--store` value: `sqlite` (or nothing) for SQLite, else a `postgres://` or
    /// `postgresql://` URL.
    ///
    /// - Throws: `.usage` for anything else, naming what is wrong, the URL's password hidden.
    public init(parsing text: String) throws(HaulError) {
        if text == "sqlite" || text.isEmpty {
            self = .sqlite
            return
        }
        self = .postgres(try PostgresLocation(parsing: text))
    }
}

/// Where a fleet's PostgreSQL database is. The password never appears in `description`.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// The URL's `sslmode`: `disable` never uses TLS, `prefer` uses it when the server offers it, and
    /// `require` refuses a server that does not.
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    /// The server's name or address, without the brackets of an IPv6 address.
    public var host: String
    /// The server's TCP port; 5432 when the URL names none.
    public var port: Int
    /// The user name to log in as, percent-decoded; never empty.
    public var user: String
    /// The login password, percent-decoded; nil when the URL has none. Never shown in `description`.
    public var password: String?
    /// The database's name: the URL's path after its `/`, as written (not percent-decoded).
    public var database: String
    /// Whether the connection uses TLS (`sslmode`); `prefer` when the URL does not say.
    public var tls: TLSMode

    /// Parses `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE]` (`postgresql://` too).
    ///
    /// - Throws: `.usage` for another scheme, no user, host or database name, a bad port, or a query
    ///   parameter other than `sslmode`; the message shows the URL with its password hidden.
    public init(parsing text: String) throws(HaulError) {
        func bad(_ why: String) -> HaulError {
            HaulError(
                .usage,
                """
                bad --store URL \(PostgresLocation.redacted(text)): \(why) (expected \
                postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)
                """
            )
        }
        var rest: Substring
        if text.hasPrefix("postgres://") {
            rest = text.dropFirst("postgres://".count)
        } else if text.hasPrefix("postgresql://") {
            rest = text.dropFirst("postgresql://".count)
        } else {
            throw bad("only sqlite and postgres:// stores exist")
        }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else { throw bad("no database name") }
        let database = String(rest[rest.index(after: slash)...])
        var authority = rest[..<slash]
        guard !database.isEmpty, !database.contains("/") else { throw bad("no database name") }
        var user = ""
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userinfo.firstIndex(of: ":") {
                user = Self.percentDecoded(userinfo[..<colon])
                password = Self.percentDecoded(userinfo[userinfo.index(after: colon)...])
            } else {
                user = Self.percentDecoded(userinfo)
            }
        }
        guard !user.isEmpty else { throw bad("no user name") }
        var host = String(authority)
        var port = 5432
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw bad("unclosed [ in the host") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                    throw bad("bad port")
                }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                throw bad("bad port")
            }
            port = number
        }
        guard !host.isEmpty else { throw bad("no host") }
        var tls = TLSMode.prefer
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0] == "sslmode" else { throw bad("unknown parameter \(pair)") }
            guard let mode = TLSMode(rawValue: parts[1]) else {
                throw bad("sslmode must be disable, prefer or require")
            }
            tls = mode
        }
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// `postgres://USER@HOST:PORT/DATABASE`: the password left out, for messages and logs.
    public var description: String {
        "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }

    /// The URL as given with its password hidden, for messages.
    static func redacted(_ text: String) -> String {
        guard let scheme = text.firstRange(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") else {
            return text
        }
        let userinfo = text[scheme.upperBound..<at]
        guard let colon = userinfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex),
                high < utf8.endIndex,
                let low = utf8.index(index, offsetBy: 2, limitedBy: utf8.endIndex), low < utf8.endIndex,
                let value = UInt8(String(decoding: [utf8[high], utf8[low]], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                index = utf8.index(index, offsetBy: 3)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
