import Foundation
import HaulCore
import Testing

/// `HaulError.underlying`: the error a HaulError was made from, kept for logs, never stored,
/// encoded or compared.
@Suite(.timeLimit(.minutes(1))) struct HaulErrorTests {
    struct Refused: Error, CustomStringConvertible {
        var port: Int
        var description: String { "connection refused on port \(port)" }
    }

    @Test func theUnderlyingErrorIsKeptAsThrownAndNamesTheCause() throws {
        let error = HaulError(.network, "cannot connect", underlying: Refused(port: 9))
        #expect((error.underlying as? Refused)?.port == 9)
        #expect(error.cause == "connection refused on port 9")
        // A cause given in words wins.
        #expect(
            HaulError(.network, "cannot connect", cause: "refused", underlying: Refused(port: 9)).cause == "refused")
    }

    @Test func itIsNeitherEncodedNorCompared() throws {
        let error = HaulError(.network, "cannot connect", httpStatus: 503, underlying: Refused(port: 9))
        let json = try JSONEncoder().encode(error)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(Set(object.keys) == ["code", "message", "httpStatus", "cause"])
        let decoded = try JSONDecoder().decode(HaulError.self, from: json)
        #expect(decoded.underlying == nil)
        #expect(decoded == error)
        #expect(decoded.hashValue == error.hashValue)
        // The stored form of an error written before `underlying` existed reads the same.
        let old = Data(#"{"code":"network","message":"cannot connect","cause":"refused"}"#.utf8)
        #expect(
            try JSONDecoder().decode(HaulError.self, from: old)
                == HaulError(.network, "cannot connect", cause: "refused"))
    }

    @Test func fromKeepsAHaulErrorAndWrapsAnyOther() {
        let own = HaulError(.diskFull, "no space")
        #expect(HaulError.from(own, otherwise: .fileSystem) == own)
        let wrapped = HaulError.from(Refused(port: 9), otherwise: .network)
        #expect(wrapped == HaulError(.network, "connection refused on port 9"))
        #expect((wrapped.underlying as? Refused)?.port == 9)
        #expect(HaulError.from(Refused(port: 9), otherwise: .store, "cannot open").message == "cannot open")
    }
}
