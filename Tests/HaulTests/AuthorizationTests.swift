import Foundation
import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// A download's `Authorization` (a registry's `Bearer` token, `DownloadRequest.authorization`)
/// through the real engine: sent with every request to the download's own origin, never to a
/// mirror on another host, and never stored.
@Suite(.timeLimit(.minutes(2))) struct AuthorizationTests {
    @Test func theTokenGoesToItsOriginOnlyAndIsNeverStored() async throws {
        let payload = Payload(seed: 3401, length: 8 << 20)
        try await withHarness { harness in
            let mirror = try await TestServer.start()
            harness.server.setRoute("/blob", Route(payload: payload, throttle: 4 << 20))
            mirror.setRoute("/blob", Route(payload: payload, throttle: 4 << 20))
            var request = try harness.request("/blob", connections: 4)
            request.mirrors = [try RemoteURL(mirror.url("/blob"))]
            request.authorization = "Bearer token-3401"
            let outcome = try await harness.download(request)
            #expect(outcome.record.status == .completed, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: try #require(outcome.path)) == nil)
            let own = harness.server.requests(to: "/blob")
            #expect(!own.isEmpty)
            #expect(
                own.allSatisfy {
                    $0.headers.contains { $0.name.lowercased() == "authorization" && $0.value == "Bearer token-3401" }
                })
            #expect(
                !mirror.requests(to: "/blob").contains {
                    $0.headers.contains { $0.name.lowercased() == "authorization" }
                },
                "the mirror never gets the token")
            #expect(!StoredRecord.json(outcome.record).contains("token-3401"), "never stored")
            try await mirror.shutdown()
        }
    }
}
