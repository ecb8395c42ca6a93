import HaulCore
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Leases: claims in queue order, renewals that carry live progress, releases, and where
/// other hosts' runs are. A lease is held with its generation: a save or renewal under an older
/// one changes nothing (see docs/ARCHITECTURE.md, "A fleet").
extension PostgresDownloadStore {
    public func holds(_ id: DownloadID) -> Bool {
        held.withLockedValue { $0[id] != nil }
    }

    public func claim(limit: Int, excluding excluded: [DownloadID]) async throws -> [DownloadRecord] {
        guard limit > 0 else { return [] }
        // A lease under this host's name that this process does not hold is its previous
        // process's (the name's lock proves that one is gone): taken back at once.
        let mine = Array(Set(excluded.map(\.rawValue) + held.withLockedValue { $0.keys.map(\.rawValue) }))
        let query: PostgresQuery = """
            WITH next AS (
                SELECT id FROM haul_downloads AS q
                WHERE status IN ('queued', 'running')
                    AND (lease_owner IS NULL OR lease_expires < now() OR lease_owner = \(host))
                    AND id <> ALL(\(mine)::text[])
                    AND (digest IS NULL OR NOT EXISTS (
                        SELECT 1 FROM haul_downloads AS t
                        WHERE t.digest = q.digest AND t.id <> q.id AND t.status IN ('queued', 'running')
                            AND ((t.lease_owner IS NOT NULL AND t.lease_expires >= now())
                                OR t.priority > q.priority
                                OR (t.priority = q.priority AND (t.position < q.position
                                    OR (t.position = q.position AND t.id COLLATE "C" < q.id COLLATE "C"))))))
                \(unescaped: QueueOrder.postgres)
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE haul_downloads AS d SET lease_owner = \(host), lease_generation = d.lease_generation + 1,
                lease_expires = now() + make_interval(secs => \(leaseSeconds)),
                live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL
            FROM next WHERE d.id = next.id
            RETURNING d.id, d.status, d.priority, d.position, d.record, d.credentials, d.lease_generation
            """
        let rows = try await fetchRows(query, "claim", as: (String, String, Int, Int64, String, String?, Int64).self)
        var claimed: [DownloadRecord] = []
        for row in rows {
            let record = try Self.decode((row.0, row.1, row.2, row.3, row.4, row.5))
            held.withLockedValue { $0[record.id] = row.6 }
            claimed.append(record)
        }
        return claimed.sorted { $0.runsBefore($1) }
    }

    public func renew(_ progress: [DownloadID: HaulCore.Progress?]) async throws -> LeaseReport {
        let leases = held.withLockedValue { $0 }
        guard !leases.isEmpty else { return LeaseReport() }
        var ids: [String] = []
        var generations: [Int64] = []
        var completed: [Int64] = []
        var totals: [Int64] = []
        var speeds: [Double] = []
        var connections: [Int32] = []
        for (id, generation) in leases {
            let live = progress[id] ?? nil
            ids.append(id.rawValue)
            generations.append(generation)
            completed.append(live?.completed ?? -1)
            totals.append(live?.total ?? -1)
            speeds.append(live?.bytesPerSecond ?? 0)
            connections.append(Int32(live?.connections ?? 0))
        }
        let query: PostgresQuery = """
            UPDATE haul_downloads AS d SET lease_expires = now() + make_interval(secs => \(leaseSeconds)),
                live_completed = NULLIF(u.completed, -1), live_total = NULLIF(u.total, -1),
                live_speed = u.speed, live_connections = u.connections
            FROM unnest(\(ids)::text[], \(generations)::int8[], \(completed)::int8[], \(totals)::int8[], \(speeds)::float8[], \(connections)::int4[])
                AS u(id, generation, completed, total, speed, connections)
            WHERE d.id = u.id AND d.lease_owner = \(host) AND d.lease_generation = u.generation
            RETURNING d.id, d.command
            """
        let rows = try await fetchRows(query, "renew leases", as: (String, String?).self)
        var report = LeaseReport()
        let renewed = Set(rows.map { DownloadID(rawValue: $0.0) })
        for (id, command) in rows {
            if let command, let parsed = FleetCommand(rawValue: command) {
                report.commands[DownloadID(rawValue: id)] = parsed
            }
        }
        held.withLockedValue { held in
            // Lost: still held here with the generation this renewal tried. A lease released
            // while the renewal ran (its run ended) is not lost, and a claim made meanwhile
            // keeps its own generation.
            for (id, generation) in leases where !renewed.contains(id) && held[id] == generation {
                held[id] = nil
                report.lost.insert(id)
            }
        }
        return report
    }

    public func release(_ id: DownloadID) async throws {
        guard let generation = held.withLockedValue({ $0.removeValue(forKey: id) }) else { return }
        let query: PostgresQuery = """
            UPDATE haul_downloads SET lease_owner = NULL, lease_expires = NULL, command = NULL,
                live_completed = NULL, live_total = NULL, live_speed = NULL, live_connections = NULL
            WHERE id = \(id.rawValue) AND lease_owner = \(host) AND lease_generation = \(generation)
            """
        try await execute(query, "release a lease")
    }

    public func runs(_ ids: [DownloadID]) async throws -> [DownloadID: FleetRun] {
        guard !ids.isEmpty else { return [:] }
        let query: PostgresQuery = """
            SELECT id, lease_owner, live_completed, live_total, live_speed, live_connections FROM haul_downloads
            WHERE id = ANY(\(ids.map(\.rawValue))::text[]) AND lease_owner IS NOT NULL AND lease_expires > now()
            """
        let rows = try await fetchRows(
            query, "read the fleet's runs", as: (String, String, Int64?, Int64?, Double?, Int?).self)
        var runs: [DownloadID: FleetRun] = [:]
        for (id, owner, completed, total, speed, connections) in rows {
            let progress = completed.map {
                HaulCore.Progress(
                    completed: $0, total: total, bytesPerSecond: speed ?? 0, connections: connections ?? 0)
            }
            runs[DownloadID(rawValue: id)] = FleetRun(host: owner, progress: progress)
        }
        return runs
    }

    var leaseSeconds: Double { leaseTimeout.seconds }
}
