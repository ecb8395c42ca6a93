import HaulCore
import PostgresNIO

/// Query plumbing: every query within its time limit, every failure as the `HaulError` the
/// engine acts on.
extension PostgresDownloadStore {
    func records(_ query: PostgresQuery) async throws -> [DownloadRecord] {
        let rows = try await fetchRows(query, "read downloads", as: (String, String, Int, Int64, String, String?).self)
        return try rows.map(Self.decode)
    }

    /// Every row `query` returns, decoded as `columns`, within the time limit.
    func fetchRows<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, _ what: String, as columns: (repeat each Column).Type
    ) async throws -> [(repeat each Column)] {
        try await timed(what) { [client, logger] in
            var rows: [(repeat each Column)] = []
            for try await row in try await client.query(query, logger: logger).decode(columns) { rows.append(row) }
            return rows
        }
    }

    func returnedIDs(_ query: PostgresQuery, _ what: String) async throws -> [String] {
        try await fetchRows(query, what, as: String.self)
    }

    func execute(_ query: PostgresQuery, _ what: String) async throws {
        try await timed(what) { [client, logger] in _ = try await client.query(query, logger: logger) }
    }

    /// Runs `body` within the query time limit; every failure comes out as a `HaulError`. Past
    /// the limit the caller goes on (`storeUnavailable`) even if the query never answers
    /// (`TimeLimit`); such a query may still land later, which its lease fence makes harmless:
    /// a save under a lease no longer held changes nothing, and one that lands while it is held
    /// carries offsets the disk already has.
    func timed<T: Sendable>(_ what: String, limit: Duration? = nil, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        try await Self.timed(what, limit: limit ?? queryTimeout, body)
    }

    static func timed<T: Sendable>(_ what: String, limit: Duration, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        let answer: T?
        do {
            answer = try await TimeLimit.run(limit, body)
        } catch {
            throw Self.classify(error)
        }
        guard let answer else {
            throw HaulError(.storeUnavailable, "the fleet database did not answer within \(limit) (\(what))")
        }
        return answer
    }

    /// Any error from PostgresNIO, the pool or a time limit as the `HaulError` the engine acts on.
    static func classify(_ error: any Error) -> HaulError {
        if let error = error as? HaulError { return error }
        if let error = error as? PostgresTransactionError {
            return classify(
                error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
                    ?? HaulError(.store, "\(error)"))
        }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "\(error)"
                if state == "28P01" || state == "28000" { return HaulError(.storeLogin, message) }
                if state.hasPrefix("08") || state.hasPrefix("57P") { return HaulError(.storeUnavailable, message) }
                if state == "23505", error.serverInfo?[.constraintName] == "haul_downloads_live_name" {
                    return HaulError(
                        .fileExists,
                        "another download in that directory already has that file name; nothing was changed")
                }
                return HaulError(.store, message + (state.isEmpty ? "" : " (\(state))"))
            case .authMechanismRequiresPassword:
                return HaulError(.storeLogin, "the server wants a password and the URL has none")
            case .unsupportedAuthMechanism, .saslError:
                return HaulError(
                    .storeLogin, "authentication failed: \(error.underlying.map { "\($0)" } ?? "\(error.code)")")
            case .sslUnsupported:
                return HaulError(.storeUnavailable, "the server does not support TLS (add ?sslmode=disable)")
            default:
                return HaulError(.storeUnavailable, error.underlying.map { "\($0)" } ?? "\(error.code)")
            }
        }
        if error is CancellationError { return HaulError(.interrupted, "cancelled") }
        return HaulError(.storeUnavailable, "\(error)")
    }
}
