import HaulCore
import PostgresNIO

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Groups of downloads in the fleet's database (`haul_groups`), shared by every host: the
/// group's JSON, with its state, age and members in columns.
extension PostgresDownloadStore {
    public func saveGroup(_ group: DownloadGroup) async throws {
        let body = String(decoding: try JSONEncoder().encode(group), as: UTF8.self)
        let members = group.members.map(\.rawValue)
        try await execute(
            """
            INSERT INTO haul_groups (id, state, created_at, members, body)
            VALUES (\(group.id.rawValue), \(group.state.rawValue), \(group.createdAt), \(members), \(body))
            ON CONFLICT (id) DO UPDATE SET state = excluded.state, members = excluded.members, body = excluded.body
            """, "save a group")
    }

    public func group(_ id: GroupID) async throws -> DownloadGroup? {
        try await groups("SELECT body FROM haul_groups WHERE id = \(id.rawValue)", "read a group").first
    }

    public func groups(containing id: DownloadID) async throws -> [DownloadGroup] {
        try await groups(
            "SELECT body FROM haul_groups WHERE members @> ARRAY[\(id.rawValue)] ORDER BY created_at, id",
            "read a download's groups")
    }

    public func unfinishedGroups() async throws -> [DownloadGroup] {
        try await groups(
            "SELECT body FROM haul_groups WHERE state <> 'finished' ORDER BY created_at, id", "read unfinished groups")
    }

    public func allGroups() async throws -> [DownloadGroup] {
        try await groups("SELECT body FROM haul_groups ORDER BY created_at, id", "read the groups")
    }

    public func deleteGroup(_ id: GroupID) async throws {
        try await execute("DELETE FROM haul_groups WHERE id = \(id.rawValue)", "delete a group")
    }

    private func groups(_ query: PostgresQuery, _ what: String) async throws -> [DownloadGroup] {
        try await fetchRows(query, what, as: String.self).map { body in
            do {
                return try JSONDecoder().decode(DownloadGroup.self, from: Data(body.utf8))
            } catch {
                throw HaulError(.store, "a group's row in the fleet database cannot be read", underlying: error)
            }
        }
    }
}
