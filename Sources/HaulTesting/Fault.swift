/// A misbehaviour the test server puts on the wire for one request.
///
/// Resumable downloads are mostly about surviving servers and networks that go wrong, so each
/// case reproduces one real-world failure exactly and deterministically. Faults are assigned per
/// request through ``Route/script`` and ``Route/then``.
public enum Fault: Sendable {
    /// Answer normally.
    case none
    /// Send the normal response head, then close the connection after this many body bytes
    /// (a connection lost mid-transfer). If the body is shorter, all of it is sent before closing.
    case dropAfter(Int64)
    /// Answer with this status and headers and a short text body instead of the file
    /// (e.g. 503 with Retry-After, 404).
    case status(Int, headers: [(String, String)] = [])
    /// Ignore the Range header for this request: 200 with the whole body
    /// (a server or proxy that does not support ranges after all).
    case ignoreRange
    /// Answer a range request with a 206 whose Content-Range (and body) starts `shift` bytes away
    /// from what was asked. The body is the payload bytes for the advertised range, so the
    /// response is self-consistent but not what was asked; a client must check Content-Range.
    /// The advertised range is clamped to the payload. Requests without a usable range are
    /// answered normally.
    case wrongContentRange(shift: Int64)
    /// Advertise `extra` more bytes in Content-Length than are then sent, then close the
    /// connection (a truncated response that looks complete from the head alone).
    case lyingContentLength(extra: Int64)
    /// Send the head and this many body bytes, then send nothing more but keep the connection
    /// open (until the server shuts down), so read timeouts can be tested.
    case stallAfter(Int64)
    /// Send the head and this many body bytes, then send nothing more; read nothing from the
    /// connection from the moment the head goes out, and never close it (until the server shuts
    /// down): a server busy sending a body, which never reads what the client sends, so a TLS
    /// client that cuts the response waits in vain for the answer to its close_notify. A client
    /// must close such a connection itself. ``TestServer/heldConnections`` counts them.
    case holdAfter(Int64)
    /// Answer 200 with this text as the whole body instead of the file (a Metalink document, an
    /// HTML page), with these headers (`Content-Type` is `text/plain` unless one is given). No
    /// ranges, no validators.
    case document(String, headers: [(String, String)] = [])
    /// Redirect (Location: absolute URL on this server to `path`; a value that already starts
    /// with `http://` or `https://` is sent as is).
    case redirect(to: String, status: Int = 302)
    /// From this request on, the route serves this payload with this ETag (the change persists);
    /// this request is then answered normally with the new entity (honouring If-Range: a
    /// mismatching If-Range gets a 200 with the whole new body). The route's Last-Modified is
    /// cleared, because the old date would otherwise validate the new entity.
    case switchEntity(Payload, etag: String)
    /// Send a chunked body (`Transfer-Encoding: chunked`, whatever the route says) whose framing
    /// breaks in `way`, then close the connection: a server or proxy that corrupts the framing.
    /// The body bytes are the ones the request asks for, as for ``none``.
    case brokenChunks(BrokenChunks)
}

/// How a chunked body's framing breaks (see ``Fault/brokenChunks(_:)``).
public enum BrokenChunks: Sendable, Hashable {
    /// The first `after` body bytes in a well-formed chunk, then a chunk-size line reading `size`
    /// followed by the rest of the body. `"zz"` is not a hex number; `"7fffffffffffffff"` is a
    /// chunk no body could fill, so the client reads until the connection closes.
    case badSize(String, after: Int64)
    /// Every body byte in well-formed chunks, but no last (`0`) chunk: the connection closes.
    case noLastChunk
}
