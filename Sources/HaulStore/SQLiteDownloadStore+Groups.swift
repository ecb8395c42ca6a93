import HaulCore
import SQLiteNIO

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Groups of downloads (`DownloadGroup`): one row each, the group's JSON with its state and age
/// in columns. Few (one per name of content added), so a member's groups are found by reading
/// the JSON's members (`json_each`) rather than through a table of their own.
extension SQLiteDownloadStore {
    /// Inserts or replaces `group`, through the group commit.
    public func saveGroup(_ group: DownloadGroup) async throws {
        let body = String(decoding: try JSONEncoder().encode(group), as: UTF8.self)
        try await writes.perform(
            .statement(
                """
                INSERT INTO download_groups (id, state, created_at, body) VALUES (?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body
                """,
                [
                    .text(group.id.rawValue), .text(group.state.rawValue), .integer(SQLiteInt64(group.createdAt)),
                    .text(body),
                ]))
    }

    /// The group `id`; nil when there is none.
    public func group(_ id: GroupID) async throws -> DownloadGroup? {
        try decodeGroups(try await read("SELECT body FROM download_groups WHERE id = ?", [.text(id.rawValue)])).first
    }

    /// The groups `id` is a member of, oldest first.
    public func groups(containing id: DownloadID) async throws -> [DownloadGroup] {
        try decodeGroups(
            try await read(
                """
                SELECT body FROM download_groups AS g
                WHERE EXISTS (SELECT 1 FROM json_each(g.body, '$.members') WHERE value = ?)
                ORDER BY created_at, id
                """, [.text(id.rawValue)]))
    }

    /// The groups not finished, oldest first.
    public func unfinishedGroups() async throws -> [DownloadGroup] {
        try decodeGroups(
            try await read("SELECT body FROM download_groups WHERE state <> 'finished' ORDER BY created_at, id"))
    }

    /// Every group, oldest first.
    public func allGroups() async throws -> [DownloadGroup] {
        try decodeGroups(try await read("SELECT body FROM download_groups ORDER BY created_at, id"))
    }

    /// Deletes the group `id`, through the group commit.
    public func deleteGroup(_ id: GroupID) async throws {
        try await writes.perform(.statement("DELETE FROM download_groups WHERE id = ?", [.text(id.rawValue)]))
    }

    private func decodeGroups(_ rows: [SQLiteRow]) throws -> [DownloadGroup] {
        try rows.map { row in
            guard let body = row.column("body")?.string else {
                throw HaulError(.store, "a group's row in \(path) has no body")
            }
            do {
                return try JSONDecoder().decode(DownloadGroup.self, from: Data(body.utf8))
            } catch {
                throw HaulError(.store, "a group's row in \(path) cannot be read", underlying: error)
            }
        }
    }
}
