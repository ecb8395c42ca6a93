/// Which HTTP versions downloads may use (curl's `--http1.1` and `--http2`). HTTP/2 needs TLS
/// and a server that offers it (ALPN); everything else goes over HTTP/1.1 whatever this says.
public enum HTTPVersionPolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// HTTP/2 for a download's first connection, when the server offers it: many small files
    /// share one TLS connection instead of a handshake each. The extra connections of a download
    /// over several use HTTP/1.1: TCP connections of their own, so a slow range cannot stall the
    /// others through one shared flow-control window and one congestion window.
    case automatic
    /// HTTP/1.1 everywhere (`--http1.1`).
    case http1_1
    /// HTTP/2 whenever the server offers it, even for a download over several connections, whose
    /// ranges then share one TCP connection as streams (`--http2`).
    case http2

    /// Whether a request may use HTTP/2: on a download's first connection, or on an extra one.
    public func allowsHTTP2(extraConnection: Bool) -> Bool {
        switch self {
        case .automatic: !extraConnection
        case .http1_1: false
        case .http2: true
        }
    }
}
