import Foundation
import HaulCore

/// The `headers` and `credentials` columns in the one form both stores use (`StoredForms.swift`
/// in HaulCore): `HTTPHeaderList`'s own JSON and `StoredCredentials`' JSON.
enum StoredJSON {
    /// No headers: nearly every row, written and read without the JSON coder.
    static let noHeaders = #"{"fields":[]}"#

    static func headers(_ headers: HTTPHeaderList) -> String {
        headers.fields.isEmpty ? noHeaders : encode(headers)
    }

    static func headers(_ text: String) throws(HaulError) -> HTTPHeaderList {
        if text == noHeaders { return [:] }
        return try decode(HTTPHeaderList.self, text)
    }

    static func credentials(_ credentials: Credentials) -> String {
        encode(StoredCredentials(credentials))
    }

    static func credentials(_ text: String) throws(HaulError) -> Credentials {
        try decode(StoredCredentials.self, text).credentials
    }

    private static func encode(_ value: some Encodable) -> String {
        do {
            return String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        } catch {
            // Strings in arrays and objects always encode.
            preconditionFailure("cannot encode \(type(of: value)): \(error)")
        }
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
