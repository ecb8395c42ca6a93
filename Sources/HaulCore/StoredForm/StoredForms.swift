/// How both stores keep what a resume needs to be sent with: one `Codable` form each, written as
/// JSON by SQLite (its `credentials` and `headers` columns) and by the fleet's PostgreSQL (its
/// `credentials` column; headers inside the record's JSON, which is `DownloadRequest`'s own form).
///
/// - Credentials: `StoredCredentials`, `{"user": "…", "password": "…"}`.
/// - Headers: `HTTPHeaderList`'s form, `{"fields": [{"name": "…", "value": "…"}]}`.
///
/// Rows written before (SQLite `[["name","value"]]` and `["user","password"]`, the fleet's
/// `user:password` with `%` and `:` escaped) are converted by a migration (SQLite 10, fleet step 3).
public struct StoredCredentials: Codable, Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// The user name, stored as given.
    public var user: String
    /// The password, in clear; `description` and `customMirror` hide it.
    public var password: String

    /// The stored form of `credentials`.
    public init(_ credentials: Credentials) {
        user = credentials.user
        password = credentials.password
    }

    /// The credentials this form holds, for a request.
    public var credentials: Credentials { Credentials(user: user, password: password) }

    /// The user and `***` in place of the password, so a printed value never shows it.
    public var description: String { "StoredCredentials(\(user):***)" }
    /// The user and `***` in place of the password, for `dump` and debuggers.
    public var customMirror: Mirror { Mirror(self, children: ["user": user, "password": "***"]) }
}

extension DownloadRecord {
    /// What a store does with a record whose stored credentials, headers or cookies cannot be
    /// read. Not emptied in silence (a resume would then go without its `Authorization` or
    /// cookies and nothing would say why), and not thrown either (one bad row would fail every
    /// listing and a daemon's start, and with them every other download): the record comes back
    /// failed, its error naming the download and what could not be read, so nothing runs it
    /// without them and the API, `haul ls` and the web page say why. A completed or removed
    /// download never runs again and keeps its status.
    ///
    /// - Parameters:
    ///   - what: the part that could not be read (`headers`, `credentials`, `cookies`).
    ///   - detail: why, as the decoder said it (never the stored text: it holds secrets).
    public mutating func markUnreadable(_ what: String, detail: String) {
        guard status != .completed, status != .removed else { return }
        status = .failed
        error = HaulError(
            .store, "download \(id): its stored \(what) cannot be read, so it was not run without them; add it again",
            cause: detail)
    }
}

extension DecodingError {
    /// Where a stored value went wrong, never the value itself (it holds secrets): what
    /// `markUnreadable` is given as its detail.
    public var storedFormReason: String {
        func path(_ context: Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch self {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "unreadable value at '\(path(context))'"
        case .keyNotFound(let key, let context): return "no '\(key.stringValue)' at '\(path(context))'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context): return "wrong type at '\(path(context))'"
        @unknown default: return "unreadable"
        }
    }
}
