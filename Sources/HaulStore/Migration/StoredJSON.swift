import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `headers` and `credentials` columns of schema 11 (`LegacyRecordRow`): `HTTPHeaderList`'s
/// own JSON and `StoredCredentials`' JSON, read by the migration to the stored form.
enum StoredJSON {
    /// No headers: nearly every row, read without the JSON coder.
    static let noHeaders = #"{"fields":[]}"#

    static func headers(_ text: String) throws(HaulError) -> HTTPHeaderList {
        if text == noHeaders { return [:] }
        return try decode(HTTPHeaderList.self, text)
    }

    static func credentials(_ text: String) throws(HaulError) -> Credentials {
        try decode(StoredCredentials.self, text).credentials
    }

    /// The reason names where the text went wrong, never the text itself (it holds secrets).
    private static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws(HaulError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(text.utf8))
        } catch let error as DecodingError {
            throw HaulError(.store, "not the stored form of \(type)", cause: error.storedFormReason)
        } catch {
            throw HaulError(.store, "not the stored form of \(type)", cause: "\(Swift.type(of: error))")
        }
    }
}
