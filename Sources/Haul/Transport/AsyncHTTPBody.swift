import AsyncHTTPClient
import HaulCore
import NIOCore
import NIOHTTP1

/// The body of one response. Read by one runner, in order.
final class AsyncHTTPBody: ResponseBodyStream, @unchecked Sendable {
    /// How the response said its body ends: what a failure in the middle of it means.
    enum Framing: Hashable {
        case chunked
        case length(Int64)
        /// Read until the connection closes (HTTP/1.0 style): an early close cannot be told apart.
        case close

        init(headers: HTTPHeaders) {
            if headers[canonicalForm: "Transfer-Encoding"].contains(where: { $0.lowercased() == "chunked" }) {
                self = .chunked
            } else if let length = headers.first(name: "Content-Length").flatMap({ Int64($0) }) {
                self = .length(length)
            } else {
                self = .close
            }
        }
    }

    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let url: String
    private let proxy: ProxyEndpoint?
    private let framing: Framing
    private var read: Int64 = 0

    init(
        _ iterator: HTTPClientResponse.Body.AsyncIterator, url: String, proxy: ProxyEndpoint? = nil,
        framing: Framing = .close
    ) {
        self.iterator = iterator
        self.url = url
        self.proxy = proxy
        self.framing = framing
    }

    func next() async throws -> (any ByteChunk)? {
        do {
            let chunk = try await iterator.next()
            read += Int64(chunk?.readableBytes ?? 0)
            return chunk.map(Self.compacted)
        } catch {
            throw AsyncHTTPTransport.classifyBody(error, url: url, proxy: proxy, framing: framing, read: read)
        }
    }
}

extension AsyncHTTPBody {
    /// A chunk whose storage is more than twice its bytes, copied into storage of its own size.
    ///
    /// The writer keeps chunks until their batch is on disk, and a chunk pins its whole storage.
    /// Over TLS a chunk is a slice of the TLS handler's plaintext buffer, which grows to hold a
    /// whole network read and is copied at that capacity whenever it is written again while a
    /// slice of it is held: with 64 TLS connections the chunks the writer held (about 2 MiB of
    /// bytes) pinned 90 MB of such storage (heaptrack's peak). A copy costs one `memcpy` of bytes
    /// that were just decrypted; a chunk that fills most of its storage (a plain HTTP read) is
    /// passed on as it is.
    static func compacted(_ chunk: ByteBuffer) -> ByteBuffer {
        guard chunk.storageCapacity > 2 * chunk.readableBytes else { return chunk }
        var copy = ByteBufferAllocator().buffer(capacity: chunk.readableBytes)
        copy.writeImmutableBuffer(chunk)
        return copy
    }
}

extension ByteBuffer: ByteChunk {
    /// The readable bytes, the only ones a chunk holds.
    public var count: Int { readableBytes }

    /// The readable bytes at `range`, counted from the reader index, sharing this buffer's
    /// storage. `range` must lie within `count`.
    public func slice(_ range: Range<Int>) -> ByteBuffer {
        getSlice(at: readerIndex + range.lowerBound, length: range.count)!
    }

    /// Calls `body` with the readable bytes, without copying them.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeReadableBytes(body)
    }
}
