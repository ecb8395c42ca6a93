/// Where download records live. `HaulStore` implements it on SQLite; tests and library users
/// that want no persistence can use `InMemoryDownloadStore`.
public protocol DownloadStore: Sendable {
    /// Inserts or replaces the whole record in one atomic write.
    func save(_ record: DownloadRecord) async throws
    /// The record of `id`, whatever its status; nil when the store has none.
    func record(_ id: DownloadID) async throws -> DownloadRecord?
    /// The live (not removed) record for the same download as `request`, if any.
    func record(matching request: DownloadRequest) async throws -> DownloadRecord?
    /// `record(matching:)` for many requests at once, keyed by `identity`.
    func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord]
    /// Records, optionally only those with a status, in queue order (priority, then
    /// position, then id).
    func records(status: DownloadStatus?) async throws -> [DownloadRecord]
    /// Another live record that already uses `fileName` in `directory`, if any.
    func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID?
    /// `fileNameHolder` for many names at once (a batch of adds): a live record holding each
    /// name that one holds, keyed by the name's place.
    func fileNameHolders(_ names: [FileNamePlace]) async throws -> [FileNamePlace: DownloadID]
    /// Gives the stored download `id` the file name `fileName` in `directory`, unless another
    /// live record holds that name; returns whether it did. Stores that several processes or
    /// hosts share decide it in one statement (and their unique index on live names), so two
    /// downloads naming themselves at once cannot both get one name.
    func reserveFileName(_ fileName: String, directory: String, for id: DownloadID) async throws -> Bool
    /// Deletes the record of `id` for good; an unknown id is no error.
    func delete(_ id: DownloadID) async throws
    /// Saves many records at once; a store may do it in fewer writes than one per record.
    func save(_ records: [DownloadRecord]) async throws
    /// How many records have each status.
    func counts() async throws -> [DownloadStatus: Int]
    /// Ids in queue order: with that status, or (nil) every status but removed. Listing ten
    /// thousand downloads reads ids first and records in pages, so memory stays bounded.
    func ids(status: DownloadStatus?) async throws -> [DownloadID]
    /// These records, in any order; unknown ids are skipped.
    func records(_ ids: [DownloadID]) async throws -> [DownloadRecord]
    /// Changes only a record's place in the queue.
    func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws
    /// The places (id, priority, position) of the records with `status`, in queue order: what
    /// the waiting list needs of the paused downloads, without reading whole records.
    func places(status: DownloadStatus) async throws -> [WaitingQueue.Entry]
    /// Keeps `group` whole, in place of any with its id. (Default: refused,
    /// `DownloadGroup.unsupported`: a store that keeps no groups cannot take a name of content.)
    func saveGroup(_ group: DownloadGroup) async throws
    /// The group with `id`; nil when there is none. (Default: none.)
    func group(_ id: GroupID) async throws -> DownloadGroup?
    /// The groups `id` is a member of, oldest first. (Default: none.)
    func groups(containing id: DownloadID) async throws -> [DownloadGroup]
    /// The groups not finished (waiting, or whose finish failed), oldest first. (Default: none.)
    func unfinishedGroups() async throws -> [DownloadGroup]
    /// Every group, oldest first (aria2's `followedBy` at start). (Default: none.)
    func allGroups() async throws -> [DownloadGroup]
    /// Deletes the group `id`; nothing happens when there is none. (Default: nothing.)
    func deleteGroup(_ id: GroupID) async throws
}

/// A file name in a directory: what `-o` names, and what two downloads may not share.
public struct FileNamePlace: Hashable, Sendable {
    /// The directory the file goes in, as the request gives it.
    public var directory: String
    /// The file's name in `directory`.
    public var fileName: String

    /// The name `fileName` in `directory`.
    public init(directory: String, fileName: String) {
        self.directory = directory
        self.fileName = fileName
    }
}

extension DownloadStore {
    /// By default, one `fileNameHolder` call per distinct name, no download excepted.
    public func fileNameHolders(_ names: [FileNamePlace]) async throws -> [FileNamePlace: DownloadID] {
        var holders: [FileNamePlace: DownloadID] = [:]
        for name in Set(names) {
            holders[name] = try await fileNameHolder(
                name.fileName, directory: name.directory, except: DownloadID(rawValue: ""))
        }
        return holders
    }

    /// A store only this process uses: the check is the reservation (the record is saved with
    /// its name at the next checkpoint).
    public func reserveFileName(_ fileName: String, directory: String, for id: DownloadID) async throws -> Bool {
        try await fileNameHolder(fileName, directory: directory, except: id) == nil
    }

    /// Whether another live record already uses `fileName` in `directory`.
    public func isFileNameTaken(_ fileName: String, directory: String, except id: DownloadID) async throws -> Bool {
        try await fileNameHolder(fileName, directory: directory, except: id) != nil
    }

    /// By default, one `record(matching:)` call per distinct identity.
    public func records(matching requests: [DownloadRequest]) async throws -> [String: DownloadRecord] {
        var found: [String: DownloadRecord] = [:]
        for request in requests where found[request.identity] == nil {
            if let record = try await record(matching: request) { found[request.identity] = record }
        }
        return found
    }

    /// By default, one `save` per record, in order: not atomic as a whole (a failure leaves the
    /// records before it saved).
    public func save(_ records: [DownloadRecord]) async throws {
        for record in records { try await save(record) }
    }

    /// By default, the ids of `records(status:)` in its order, removed ones left out when `status`
    /// is nil.
    public func ids(status: DownloadStatus?) async throws -> [DownloadID] {
        try await records(status: status).filter { status != nil || $0.status != .removed }.map(\.id)
    }

    /// By default, one `record(_:)` call per id, in the order given; unknown ids are skipped.
    public func records(_ ids: [DownloadID]) async throws -> [DownloadRecord] {
        var found: [DownloadRecord] = []
        for id in ids { if let record = try await record(id) { found.append(record) } }
        return found
    }

    /// By default, the places of `records(status:)`, sorted in queue order.
    public func places(status: DownloadStatus) async throws -> [WaitingQueue.Entry] {
        try await records(status: status).map(WaitingQueue.Entry.init).sorted { $0.runsBefore($1) }
    }

    /// By default, reads the record, sets its priority and position, and saves it whole; an unknown
    /// id changes nothing.
    public func setPlace(_ id: DownloadID, priority: Int, position: Int64) async throws {
        guard var record = try await record(id) else { return }
        record.request.priority = priority
        record.position = position
        try await save(record)
    }

    /// By default, refused: this store keeps no groups.
    public func saveGroup(_ group: DownloadGroup) async throws { throw DownloadGroup.unsupported }

    /// By default, none.
    public func group(_ id: GroupID) async throws -> DownloadGroup? { nil }

    /// By default, none.
    public func groups(containing id: DownloadID) async throws -> [DownloadGroup] { [] }

    /// By default, none.
    public func unfinishedGroups() async throws -> [DownloadGroup] { [] }

    /// By default, nothing.
    public func deleteGroup(_ id: GroupID) async throws {}

    /// By default, none.
    public func allGroups() async throws -> [DownloadGroup] { [] }

    /// By default, counts every record `records(status: nil)` returns, removed ones included.
    public func counts() async throws -> [DownloadStatus: Int] {
        var counts: [DownloadStatus: Int] = [:]
        for record in try await records(status: nil) { counts[record.status, default: 0] += 1 }
        return counts
    }
}

/// A piece of a response body, in whatever buffer type the transport uses, so the writer can
/// keep it without copying.
public protocol ByteChunk: Sendable {
    /// How many bytes the chunk holds.
    var count: Int { get }
    /// The bytes at `range` (relative to this chunk), sharing storage where the type allows.
    func slice(_ range: Range<Int>) -> Self
    /// Calls `body` with the chunk's bytes in contiguous memory, valid only during the call, and
    /// returns what it returns.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ByteChunk where Element == UInt8 {
    /// The bytes at `range`, copied into a new array.
    public func slice(_ range: Range<Int>) -> [UInt8] { Array(self[range]) }
}

/// A response body, read once, in order. Errors are `HaulError`s already classified by the transport.
public protocol ResponseBodyStream: Sendable {
    /// The next chunk of the body, or nil once it has ended; throws the `HaulError` that cut it
    /// short.
    func next() async throws -> (any ByteChunk)?
}

/// Sends requests. `Haul` implements it with AsyncHTTPClient; the core never sees a socket.
public protocol HTTPTransport: Sendable {
    /// Sends `plan`, following redirects, and returns the final head plus its body.
    /// Throws `HaulError` (network, too many redirects, ...).
    func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream)
}

/// Takes body bytes to the `.part` file at explicit offsets, for several connections at once
/// (DESIGN rule 2). Writes are queued per part and batched; `checkpoint` is the durability
/// point: after it returns, the offsets it reports survive a crash, and only then may the store
/// record them. Shared by the connections of one download, so it is `Sendable`.
public protocol ChunkWriter: AnyObject, Sendable {
    /// Takes `chunk` for file offset `offset` on behalf of the part that starts at remote
    /// offset `part`. Each part's chunks come in order, back to back. Returns once the chunk is
    /// kept in the part's batch or its full batch handed to the disk; it waits while too much is
    /// handed over and not yet written (backpressure reaches the socket). A failed write is
    /// thrown by a later call.
    func write(_ chunk: any ByteChunk, at offset: Int64, part: Int64) async throws
    /// Writes everything kept, fsyncs the file once, and returns for each part the file offset
    /// after its last byte written before the fsync: now durable.
    func checkpoint() async throws -> [Int64: Int64]
    /// Writes everything kept, without fsync, and returns for each part the file offset after
    /// its last written byte: in the page cache, safe from a killed process but not from a
    /// crash of the machine (see `.noteProgress`).
    func flush() async throws -> [Int64: Int64]
    /// The file's bytes at `offset` (what was queued before included).
    func read(at offset: Int64, count: Int) async throws -> [UInt8]
    /// Drops everything queued and cuts the file to `length`.
    func truncate(to length: Int64) async throws
    /// Writes what is kept, then closes the file once nothing uses it (never under a running
    /// fsync); throws what failed to be written or closed.
    func close() async throws
    /// Drops what is kept and closes the file once nothing uses it: later writes fail. For a
    /// run that lost its lease to another host, which now owns the file.
    func discard() async throws
}

extension DownloadStore {
    /// The record of `id`; throws `notFound` when there is none, or (unless `removedToo`) when it
    /// was removed.
    public func existing(_ id: DownloadID, removedToo: Bool = false) async throws -> DownloadRecord {
        guard let record = try await record(id), removedToo || record.status != .removed else {
            throw HaulError(.notFound, "no download with id \(id)")
        }
        return record
    }
}
