import Foundation
import HaulCore
import PostgresNIO

/// A row of `haul_downloads` and a `DownloadRecord`: the record as JSON (headers inside it, in
/// `HTTPHeaderList`'s form) plus the columns the queue is ordered and filtered by, which win over
/// the JSON; credentials in their own column as `StoredCredentials` JSON (HaulCore's
/// `StoredForms.swift`, the form SQLite keeps them in too).
extension PostgresDownloadStore {
    static func decode(_ row: (String, String, Int, Int64, String, String?)) throws -> DownloadRecord {
        var record: DownloadRecord
        do {
            record = try JSONDecoder().decode(DownloadRecord.self, from: Data(row.4.utf8))
        } catch {
            throw HaulError(.store, "unreadable download \(row.0) in the fleet database: \(error)")
        }
        guard let status = DownloadStatus(rawValue: row.1) else { throw HaulError(.store, "download \(row.0) has an unknown status \(row.1)") }
        record.status = status
        record.request.priority = row.2
        record.position = row.3
        if let credentials = row.5 {
            do {
                record.request.credentials = try JSONDecoder().decode(StoredCredentials.self, from: Data(credentials.utf8)).credentials
            } catch let error as DecodingError {
                record.markUnreadable("credentials", detail: error.storedFormReason)
            } catch {
                record.markUnreadable("credentials", detail: "\(type(of: error))")
            }
        }
        return record
    }

    /// `StoredCredentials` as the `credentials` column holds it.
    static func storedCredentials(_ credentials: Credentials) throws -> String {
        String(decoding: try JSONEncoder().encode(StoredCredentials(credentials)), as: UTF8.self)
    }
}

/// One record's columns.
struct Fields {
    static let count = 10
    let id: String, identity: String, status: String, priority: Int, position: Int64, createdAt: Int64
    let directory: String, fileName: String?, json: String, credentials: String?

    init(_ record: DownloadRecord, keepCredentials: Bool) throws {
        id = record.id.rawValue
        identity = record.request.identity
        status = record.status.rawValue
        priority = record.request.priority
        position = record.position
        createdAt = record.createdAt
        directory = record.request.directory
        fileName = record.fileName
        json = String(decoding: try JSONEncoder().encode(record), as: UTF8.self)
        credentials = keepCredentials ? try record.request.credentials.map(PostgresDownloadStore.storedCredentials) : nil
    }

    func bind(into binds: inout PostgresBindings) {
        binds.append(id)
        binds.append(identity)
        binds.append(status)
        binds.append(priority)
        binds.append(position)
        binds.append(createdAt)
        binds.append(directory)
        if let fileName { binds.append(fileName) } else { binds.appendNull() }
        binds.append(json)
        if let credentials { binds.append(credentials) } else { binds.appendNull() }
    }
}
