/// Which HTTP versions downloads may use (curl's `--http1.1` and `--http2`). HTTP/2 needs TLS
/// and a server that offers it (ALPN); everything else goes over HTTP/1.1 whatever this says.
public enum HTTPVersionPolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// HTTP/2 for small requests (at most `smallRequest` bytes: a small file, a download's first
    /// piece, the last bytes of a resume), when the server offers it: many small files share one
    /// TLS connection instead of a handshake each. A larger range goes over HTTP/1.1, on a TCP
    /// connection of its own: one HTTP/2 stream carried 1 GiB at 185 MiB/s where one HTTP/1.1
    /// connection carried 490 MiB/s (AsyncHTTPClient over TLS on loopback, a third of the CPU),
    /// and a slow range cannot stall the others through one shared flow-control window.
    case automatic
    /// HTTP/1.1 everywhere (`--http1.1`).
    case http1_1
    /// HTTP/2 whenever the server offers it, even for a whole large file, and for a download over
    /// several connections, whose ranges then share one TCP connection as streams (`--http2`).
    case http2

    /// The largest request `.automatic` lets HTTP/2 carry.
    public static let smallRequest: Int64 = 1 << 20

    /// Whether a request for `length` bytes (nil: to the end of a file of unknown length) may
    /// use HTTP/2.
    public func allowsHTTP2(requestLength length: Int64?) -> Bool {
        switch self {
        case .automatic: length.map { $0 <= Self.smallRequest } ?? false
        case .http1_1: false
        case .http2: true
        }
    }

    /// Whether a download's first request, for a file of unknown length, asks for a first piece
    /// of at most `smallRequest` bytes instead of the whole file: a small file is then whole in
    /// one multiplexed request, and a large one goes on over HTTP/1.1 from where the piece ended.
    public func boundsFirstRequest(scheme: String) -> Bool {
        self == .automatic && scheme == "https"
    }
}
