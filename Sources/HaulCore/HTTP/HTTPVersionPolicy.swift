/// Which HTTP versions downloads may use (curl's `--http1.1` and `--http2`). HTTP/2 needs TLS
/// and a server that offers it (ALPN); everything else goes over HTTP/1.1 whatever this says.
public enum HTTPVersionPolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// HTTP/1.1, chosen before the first request, so that each of a download's connections
    /// (`-x`) is a TCP connection of its own, as servers and CDNs count and pace them, and a
    /// download over one connection opens one. HTTP/2 would carry a download's ranges as
    /// streams of one TCP connection (a server that paces each connection then gives the whole
    /// download one connection's speed), and one HTTP/2 stream is the slower way to carry a
    /// whole file: 1 GiB at 185 MiB/s against 490 MiB/s over one HTTP/1.1 connection
    /// (AsyncHTTPClient over TLS on loopback, a third of the CPU).
    case automatic
    /// HTTP/1.1 everywhere (`--http1.1`).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // Named as the option and as NIO's `HTTPVersion.http1_1` spell it.
    case http1_1
    /// HTTP/2 whenever the server offers it, even for a whole large file, and for a download over
    /// several connections, whose ranges then share one TCP connection as streams (`--http2`).
    case http2

    /// Whether a download's requests may go over HTTP/2 (when the server offers it).
    public var allowsHTTP2: Bool { self == .http2 }
}
