import HaulCore
import NIOConcurrencyHelpers
import NIOHTTP1

/// The cookie jar one transport shares between every request and redirect hop it sends
/// (`haul get --load-cookies`): the transport adds each hop's `Cookie` field from it and puts
/// each hop's `Set-Cookie` answers in it, so a cookie set by a redirect's first hop goes with
/// the second when its domain and path match. The rules are `CookieJar`'s (HaulCore); this only
/// keeps the jar behind a lock and reads the wall clock. Held in memory only: whoever wants the
/// cookies on disk (`--save-cookies`) writes `jar` itself.
///
/// Hashable by identity, so `AsyncHTTPTransport.Configuration` stays a value.
public final class CookieStore: Sendable, Hashable, CustomStringConvertible {
    private let box: NIOLockedValueBox<CookieJar>
    private let now: @Sendable () -> Int64

    /// A store holding `jar`.
    ///
    /// - Parameters:
    ///   - jar: the cookies to start with (`--load-cookies`).
    ///   - now: seconds since 1970; the wall clock unless a test passes its own.
    public init(_ jar: CookieJar = CookieJar(), now: (@Sendable () -> Int64)? = nil) {
        self.box = NIOLockedValueBox(jar)
        self.now = now ?? { WallClock.secondsSince1970() }
    }

    /// The jar as it stands: loaded cookies and every one received since.
    public var jar: CookieJar { box.withLockedValue { $0 } }

    /// The `Cookie` field for a request to `url`, nil when none belongs there.
    public func header(for url: RemoteURL) -> String? {
        let now = now()
        return box.withLockedValue { $0.header(for: url, now: now) }
    }

    /// Takes every `Set-Cookie` value of an answer from `url`.
    public func receive(_ setCookies: [String], from url: RemoteURL) {
        guard !setCookies.isEmpty else { return }
        let now = now()
        box.withLockedValue { jar in
            for field in setCookies { jar.receive(setCookie: field, from: url, now: now) }
        }
    }

    /// Seconds since 1970 by this store's clock.
    public var secondsSince1970: Int64 { now() }

    /// Whether both are the same store; two stores holding the same cookies are not equal.
    public static func == (lhs: CookieStore, rhs: CookieStore) -> Bool { lhs === rhs }
    /// Hashes the store's identity, not its cookies.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// How many cookies the jar holds, never their values.
    public var description: String { "CookieStore(\(jar.cookies.count) cookies)" }
}

extension CookieStore {
    /// Adds the jar's cookies for one redirect hop to `url` (the jar's domain and path rules
    /// decide, per hop), after a user's own `-H Cookie`, which goes only to the first origin.
    func add(to headers: inout HTTPHeaders, for url: RemoteURL) {
        guard let cookies = header(for: url) else { return }
        if let own = headers.first(name: "Cookie") {
            headers.replaceOrAdd(name: "Cookie", value: own + "; " + cookies)
        } else {
            headers.add(name: "Cookie", value: cookies)
        }
    }
}
