/// What one run of a download cost on the wire: requests sent, distinct connections they went
/// over, how many of those were opened for it (TLS handshakes on https), and the HTTP versions
/// spoken. `haul get -v` prints it when a download ends; `--json` carries it on the last line.
public struct TransferStats: Hashable, Sendable {
    /// Requests sent, redirects the transport followed included.
    public var requests = 0
    /// Connections opened for this download's requests (the first request answered on each).
    public var connectionsOpened = 0
    /// Of those, TLS ones: each cost a handshake.
    public var tlsHandshakes = 0
    /// The distinct connections its answers came over, opened for it or reused from the pool.
    public private(set) var connectionIDs: Set<Int> = []
    /// The HTTP versions its answers came in, as the responses named them (`HTTP/1.1`, `HTTP/2`).
    public private(set) var httpVersions: Set<String> = []
    /// Some answer came over TLS (https).
    public private(set) var usedTLS = false

    /// Nothing sent yet: every count is zero.
    public init() {}

    /// Distinct connections used.
    public var connectionsUsed: Int { connectionIDs.count }

    /// A request went out (a `.request` action).
    public mutating func requestSent() {
        requests += 1
    }

    /// An answer arrived over `uses` (a redirect's hop per extra entry, sent by the transport
    /// on its own and counted here).
    public mutating func answered(over uses: [ConnectionUse]) {
        requests += max(0, uses.count - 1)
        for use in uses {
            connectionIDs.insert(use.connection)
            httpVersions.insert(use.httpVersion)
            if use.tls { usedTLS = true }
            guard use.isFirst else { continue }
            connectionsOpened += 1
            if use.tls { tlsHandshakes += 1 }
        }
    }
}
