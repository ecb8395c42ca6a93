import AsyncHTTPClient
import Foundation
import HaulCore
import HaulTesting
import NIOCore
import NIOSSL
import Testing

@testable import Haul

/// The transport's connections: a connection haul cuts is closed at once (no wait for the
/// server's close_notify), and a download knows how many connections and TLS handshakes its
/// requests took.
@Suite(.timeLimit(.minutes(2))) struct TransportTests {
    /// Every client the transport makes (direct or through a proxy, HTTP/1.1 or HTTP/2, with or
    /// without extra trust roots) closes TLS without waiting for the server's close_notify, and
    /// offers HTTP/2 only from the HTTP/2 client.
    @Test(arguments: [[], ["/etc/ssl/certs/ca-certificates.crt"]])
    func everyClientClosesTLSAtOnce(roots: [String]) async throws {
        let transport = AsyncHTTPTransport(configuration: .init(additionalTrustRoots: roots))
        for proxy in [
            nil, ProxyEndpoint(host: "127.0.0.1", port: 3128), ProxyEndpoint(kind: .socks5, host: "127.0.0.1"),
        ] {
            for http2 in [false, true] {
                let configuration = transport.clientConfiguration(for: .init(proxy: proxy, http2: http2))
                let tls = try #require(configuration.tlsConfiguration, "\(String(describing: proxy)) \(http2)")
                #expect(tls.shutdownTimeout == .zero)
                #expect(tls.additionalTrustRoots.count == roots.count)
                #expect(configuration.httpVersion == (http2 ? .automatic : .http1Only))
                #expect(configuration.proxy != nil || proxy == nil)
                let client = try transport.client(for: proxy, http2: http2)
                #expect(try transport.client(for: proxy, http2: http2) === client, "made once")
            }
        }
        await transport.shutdown()
        #expect(throws: (any Error).self) { try transport.client(for: nil, http2: false) }
    }

    /// A server that ignores ranges answers `--range 0-6291455` with the whole file: haul stops
    /// reading at the range's end and cuts the request. The server holds that connection: it
    /// never reads again (so never answers the close_notify) and never closes it. The download
    /// still completes, and the transport shuts down while the server holds the connection.
    @Test func aCutTLSConnectionTheServerHoldsDelaysNothing() async throws {
        let payload = Payload(seed: 2020, length: 8 << 20)
        let tls = try TLSFiles.makeSelfSigned()
        try await withHarness(tls: tls) { harness in
            harness.server.setRoute(
                "/held.bin", Route(payload: payload, acceptsRanges: false, script: [.holdAfter(6 << 20)]))
            let wanted = ByteRange(start: 0, end: (6 << 20) - 1)
            let outcome = try await harness.download(harness.request("/held.bin", range: wanted))
            #expect(outcome.final.isCompleted, "\(outcome.events)")
            #expect(payload.mismatch(inFileAt: harness.directory + "/held.bin", range: 0...((6 << 20) - 1)) == nil)
            let first = try #require(harness.server.responses(to: "/held.bin").first)
            #expect(first.range == 0..<payload.length, "the server sent everything")
            #expect(first.bodyBytesSent < payload.length, "and was cut")
            #expect(harness.server.heldConnections == 1, "the cut connection was the held one")
            // Returns though the server never answers the close_notify (a hang guard: the suite's limit).
            await harness.transport.shutdown()
        }
    }

    /// What a download reports about its connections is what the server saw: the connections
    /// its requests came over, each opened (and on https, handshaked) for it. (The server may
    /// have accepted one more: AsyncHTTPClient opens a connection for a request that waits, and
    /// when another one comes free first the request goes there and the new one stays idle.)
    /// A second download from the same host then counts a pooled connection as used, not opened.
    @Test(arguments: [false, true])
    func connectionCountsAreTheServers(overTLS: Bool) async throws {
        let payload = Payload(seed: 2021, length: 8 << 20)
        let small = Payload(seed: 2022, length: 100_000)
        try await withHarness(tls: overTLS ? try TLSFiles.makeSelfSigned() : nil) { harness in
            harness.server.setRoute("/counted.bin", Route(payload: payload))
            harness.server.setRoute("/small.bin", Route(payload: small))
            let added = try await harness.manager.add(harness.request("/counted.bin", connections: 4))
            let outcome = try await harness.manager.outcome(of: added.id)
            #expect(outcome.status == .completed)
            #expect(payload.mismatch(inFileAt: harness.directory + "/counted.bin") == nil)
            let transfer = try #require(outcome.transfer)
            let used = harness.server.connectionCount(to: "/counted.bin")
            #expect(used >= 2, "at least the first connection and one the split opened")
            #expect(transfer.requests == harness.server.requests(to: "/counted.bin").count)
            #expect(transfer.connectionsUsed == used)
            #expect(transfer.connectionsOpened == used, "a fresh transport: every connection was opened for it")
            #expect(transfer.connectionsOpened <= harness.server.acceptedConnections)
            #expect(transfer.tlsHandshakes == (overTLS ? used : 0))
            #expect(transfer.httpVersions == ["HTTP/1.1"])

            let second = try await harness.manager.add(harness.request("/small.bin"))
            let secondOutcome = try await harness.manager.outcome(of: second.id)
            #expect(secondOutcome.status == .completed)
            let secondTransfer = try #require(secondOutcome.transfer)
            #expect(secondTransfer.requests == 1)
            #expect(secondTransfer.connectionsUsed == 1)
            // Opened for it exactly when its request was the first the server saw on that connection.
            let connection = try #require(harness.server.responses(to: "/small.bin").first?.connection)
            let reused = harness.server.responses.contains { $0.connection == connection && $0.path == "/counted.bin" }
            #expect(secondTransfer.connectionsOpened == (reused ? 0 : 1))
            #expect(secondTransfer.tlsHandshakes == (overTLS ? secondTransfer.connectionsOpened : 0))
        }
    }
}
