/// Where download records live. `HaulStore` implements it on SQLite; tests and library users
/// that want no persistence can use `InMemoryDownloadStore`.
public protocol DownloadStore: Sendable {
    /// Inserts or replaces the whole record in one atomic write.
    func save(_ record: DownloadRecord) async throws
    func record(_ id: DownloadID) async throws -> DownloadRecord?
    /// The live (not removed) record for the same download as `request`, if any.
    func record(matching request: DownloadRequest) async throws -> DownloadRecord?
    /// Records, optionally only those with a status, ordered by priority then creation.
    func records(status: DownloadStatus?) async throws -> [DownloadRecord]
    /// Whether another live record already uses `fileName` in `directory`.
    func isFileNameTaken(_ fileName: String, directory: String, except id: DownloadID) async throws -> Bool
    func delete(_ id: DownloadID) async throws
}

/// A piece of a response body, in whatever buffer type the transport uses, readable without a copy.
public protocol ByteChunk {
    var count: Int { get }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ByteChunk where Element == UInt8 {}
extension ArraySlice: ByteChunk where Element == UInt8 {}

/// A response body, read once, in order. Errors are `HaulError`s already classified by the transport.
public protocol ResponseBodyStream: Sendable {
    func next() async throws -> (any ByteChunk)?
}

/// Sends requests. `Haul` implements it with AsyncHTTPClient; the core never sees a socket.
public protocol HTTPTransport: Sendable {
    /// Sends `plan`, following redirects, and returns the final head plus its body.
    /// Throws `HaulError` (network, too many redirects, ...).
    func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream)
}

/// Takes body bytes to the `.part` file. `sync` is the durability point: after it returns, the
/// bytes handed in so far survive a crash, and only then may the store record them.
public protocol ChunkWriter: AnyObject {
    /// Copies as many bytes as fit into the write buffer and returns how many it took.
    func buffer(_ bytes: UnsafeRawBufferPointer) -> Int
    /// True when the buffer should be written out before more is buffered.
    var isFull: Bool { get }
    /// Writes the buffered bytes to the file.
    func flush() async throws
    /// Flushes, then makes everything written durable (fsync).
    func sync() async throws
    /// Drops everything past `length` (buffered bytes too) and positions the next write there.
    func truncate(to length: Int64) async throws
}
