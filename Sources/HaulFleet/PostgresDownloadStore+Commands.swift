import HaulCore
import PostgresNIO

/// Pauses and removes asked for on any host: applied at once to a row no live lease holds, or
/// left on the row for its holder, which is told at once on `haul_commands` (`FleetSession`)
/// and otherwise hears it at its next renewal.
extension PostgresDownloadStore {
    public func request(_ command: FleetCommand, for id: DownloadID) async throws -> FleetRequestResult {
        if command == .pause {
            guard let result = try await pause([id])[id] else { throw HaulError(.internal, "no answer for \(id)") }
            return result
        }
        let rows = try await fetchRows(
            Self.commandQuery(command, ids: [id.rawValue], pausable: ""), "ask for \(command.rawValue)",
            as: (String, String, Int, Int64, String, String?, Bool, String, String?).self)
        guard let row = rows.first else { throw HaulError(.notFound, "no download with id \(id)") }
        return try await results([row])[id] ?? .leftForHolder
    }

    /// Pauses all of `ids` or none, in one statement: the rows are locked, and unless every one
    /// exists and is queued, running or paused, nothing changes and the first that is not is
    /// named (`notFound`, `conflict`).
    public func pause(_ ids: [DownloadID]) async throws -> [DownloadID: FleetRequestResult] {
        let unique = Array(Set(ids.map(\.rawValue)))
        guard !unique.isEmpty else { return [:] }
        let pausable =
            "AND (SELECT count(*) = \(unique.count) AND bool_and(before IN ('queued', 'running', 'paused')) FROM old)"
        let rows = try await fetchRows(
            Self.commandQuery(.pause, ids: unique, pausable: pausable), "pause downloads",
            as: (String, String, Int, Int64, String, String?, Bool, String, String?).self)
        guard !rows.isEmpty else {
            let found = Dictionary(try await records(ids).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for id in ids {
                guard let record = found[id], record.status != .removed else {
                    throw HaulError(.notFound, "no download with id \(id)")
                }
                if ![.queued, .running, .paused].contains(record.status) {
                    throw HaulError(
                        .conflict,
                        "download \(id) is \(record.status.rawValue): there is nothing to pause; nothing was changed")
                }
            }
            // Each was pausable when looked at again: one changed between the two reads.
            throw HaulError(.conflict, "downloads changed while they were paused; nothing was changed")
        }
        return try await results(rows)
    }

    /// Locks the rows first, so `before` is what was changed. A row a live lease holds gets the
    /// command, for its holder; any other changes at once (its lease ended, the generation passed).
    static func commandQuery(_ command: FleetCommand, ids: [String], pausable: String) -> PostgresQuery {
        let status = command == .pause ? DownloadStatus.paused : .removed
        let live = "(d.lease_owner IS NOT NULL AND d.lease_expires > now())"
        return """
            WITH old AS (SELECT id AS old_id, status AS before FROM haul_downloads
                         WHERE id = ANY(\(ids)::text[]) AND status <> 'removed' FOR UPDATE)
            UPDATE haul_downloads AS d SET
                command = CASE WHEN \(unescaped: live) THEN \(command.rawValue) ELSE NULL END,
                status = CASE WHEN \(unescaped: live) THEN d.status ELSE \(status.rawValue) END,
                lease_generation = CASE WHEN \(unescaped: live) THEN d.lease_generation ELSE d.lease_generation + 1 END,
                lease_expires = CASE WHEN \(unescaped: live) THEN d.lease_expires ELSE NULL END,
                lease_owner = CASE WHEN \(unescaped: live) THEN d.lease_owner ELSE NULL END
            FROM old WHERE d.id = old.old_id \(unescaped: pausable)
            RETURNING \(unescaped: columns), d.command IS NOT NULL, old.before, d.lease_owner
            """
    }

    /// What each row's command came to; the holders of rows that got a command are notified.
    private func results(_ rows: [(String, String, Int, Int64, String, String?, Bool, String, String?)]) async throws
        -> [DownloadID: FleetRequestResult]
    {
        var results: [DownloadID: FleetRequestResult] = [:]
        var holders: Set<String> = []
        for row in rows {
            if row.6 {
                results[DownloadID(rawValue: row.0)] = .leftForHolder
                if let owner = row.8 { holders.insert(owner) }
            } else {
                let before = DownloadStatus(rawValue: row.7) ?? .queued
                results[DownloadID(rawValue: row.0)] = .applied(
                    try Self.decode((row.0, row.1, row.2, row.3, row.4, row.5)), before: before)
            }
        }
        for holder in holders {
            do {
                try await execute("SELECT pg_notify(\(FleetSession.channel), \(holder))", "notify \(holder)")
            } catch {
                // The command is on the row: the holder's next renewal hears it anyway.
                logger.warning(
                    "cannot notify a host of a command", metadata: ["host": "\(holder)", "error": "\(error)"])
            }
        }
        return results
    }
}
