import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// HTTPS end to end: a TLS server with a certificate made for the test, trusted through the
/// transport's `additionalTrustRoots`, and a resume across a dropped TLS connection.
@Suite(.timeLimit(.minutes(2))) struct HTTPSTests {
    @Test func resumesOverTLS() async throws {
        let payload = Payload(seed: 443, length: 700_000)
        let tls = try TLSFiles.makeSelfSigned()
        try await withHarness(tls: tls) { harness in
            harness.server.setRoute("/secure.bin", Route(payload: payload, script: [.dropAfter(250_000)]))
            #expect(harness.server.url("/secure.bin").hasPrefix("https://"))
            let outcome = try await harness.download(harness.request("/secure.bin"))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/secure.bin") == nil)
            let requests = harness.server.requests(to: "/secure.bin")
            #expect(requests.count == 2)
            #expect(requests.last?.range?.hasPrefix("bytes=") == true && requests.last?.range != "bytes=0-699999")
        }
    }

    @Test func untrustedCertificateFailsClearly() async throws {
        let tls = try TLSFiles.makeSelfSigned()
        // AsyncHTTPClient retries a failed handshake until the connect timeout: keep it short.
        try await withHarness(maxAttempts: 1, connectTimeout: .seconds(2)) { harness in
            // A second server with the same certificate, which this harness does not trust.
            let server = try await TestServer.start(tls: tls)
            server.setRoute("/x", Route(payload: Payload(seed: 1, length: 10)))
            let request = try DownloadRequest(
                url: RemoteURL(server.url("/x")), destination: .directory(harness.directory))
            let outcome = try await harness.download(request)
            let error = try #require(outcome.final.failure)
            #expect(error.code == .network)
            #expect(
                error.message == "\(server.url("/x")): TLS handshake failed: the server's certificate is not trusted")
            #expect(harness.listing().isEmpty)
            try await server.shutdown()
        }
    }
}
