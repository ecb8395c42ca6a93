import HaulCore
import NIOConcurrencyHelpers
import PostgresNIO

/// File names in the fleet: one live download per name and directory, whichever host asks.
extension PostgresDownloadStore {
    public func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID?
    {
        let query: PostgresQuery = """
            SELECT id FROM haul_downloads WHERE directory = \(directory) AND file_name = \(fileName) AND id <> \(id.rawValue)
                AND status <> 'removed' LIMIT 1
            """
        return try await returnedIDs(query, "check a file name").first.map(DownloadID.init(rawValue:))
    }

    /// One statement: the name is this download's only if no live record holds it, and two
    /// hosts reserving one name at once are ordered by the unique index on live names (the
    /// second waits for the first, then gets a violation: not reserved). A held download's row
    /// changes only under its lease.
    public func reserveFileName(_ fileName: String, directory: String, for id: DownloadID) async throws -> Bool {
        let generation = held.withLockedValue { $0[id] }
        let fence = generation.map { "AND lease_owner = $5 AND lease_generation = \($0)" } ?? ""
        var binds = PostgresBindings()
        binds.append(fileName)
        binds.append(directory)
        binds.append(id.rawValue)
        binds.append("removed")
        if generation != nil { binds.append(host) }
        let sql = """
            UPDATE haul_downloads SET file_name = $1 WHERE id = $3 \(fence) AND NOT EXISTS (
                SELECT 1 FROM haul_downloads AS o WHERE o.directory = $2 AND o.file_name = $1 AND o.id <> $3 AND o.status <> $4)
            RETURNING id
            """
        do {
            if try await !returnedIDs(PostgresQuery(unsafeSQL: sql, binds: binds), "reserve a file name").isEmpty {
                return true
            }
        } catch let error as HaulError where error.code == .fileExists {
            return false
        }
        if try await fileNameHolder(fileName, directory: directory, except: id) != nil { return false }
        // Nobody has the name, so the fence refused the write, or the download is not stored yet.
        if generation != nil { throw HaulError(.leaseLost, "another host took download \(id) over") }
        return try await record(id) == nil
    }
}
