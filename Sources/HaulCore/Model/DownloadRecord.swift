/// Everything Haul persists about one download: the request, where it stands, and the facts
/// learned from the server that make a safe resume possible (final URL, validator, length).
/// `segments[i].written` is only ever stored after those bytes were fsynced (DESIGN rule 2).
public struct DownloadRecord: Hashable, Codable, Sendable {
    /// The download's identity, the key the store keeps the record under.
    public var id: DownloadID
    /// What the user asked for: the URLs, the destination and the transfer's options.
    public var request: DownloadRequest
    /// Where the download stands, as stored and shown.
    public var status: DownloadStatus
    /// The final file's name inside `request.directory`, fixed by the first response (or `-o`).
    public var fileName: String?
    /// The URL that answered last, after redirects.
    public var finalURL: String?
    /// The `ETag` and `Last-Modified` of the entity the bytes on disk came from; nil until a response
    /// sends one. A resume asks with it (`If-Range`) and compares each response's with it.
    public var validator: EntityValidator?
    /// Length of the whole remote entity, once known.
    public var totalLength: Int64?
    /// The digest of the whole representation the server announced (`Repr-Digest`, `Digest`,
    /// a full 200's `Content-Digest`), checked before publishing unless the request has a
    /// checksum (`expectedDigest`). Stored, so a resume still checks it when the resumed
    /// response sends none. Forgotten with the entity.
    public var serverDigest: ServerDigest?
    /// The parts of the file and how much of each is on disk. A new record has one segment, over the
    /// whole file or the requested range.
    public var segments: [Segment]
    /// Why it failed, when it did.
    public var error: HaulError?
    /// Seconds since 1970, set by whoever creates the record (the core reads no clock).
    public var createdAt: Int64
    /// Place in the queue among downloads of the same priority, lower first. Starts as the
    /// time added (in microseconds); moving a download up or down changes it.
    public var position: Int64

    /// A new, queued record for `request`: nothing written, its name the one the user chose (if any),
    /// and `position` the creation time (`createdAt`, seconds since 1970) in microseconds.
    public init(id: DownloadID, request: DownloadRequest, createdAt: Int64) {
        self.id = id
        self.request = request
        self.status = .queued
        self.fileName = request.fileName
        self.segments = [Segment(start: request.range?.start ?? 0, end: request.range?.end)]
        self.createdAt = createdAt
        self.position = createdAt * 1_000_000
    }

    /// Queue order (`QueueOrder`): higher priority first, then lower position, then id.
    public func runsBefore(_ other: DownloadRecord) -> Bool {
        QueueOrder.runsBefore((request.priority, position, id), (other.request.priority, other.position, other.id))
    }

    /// Failed because its URL expired midway: it waits, its bytes kept, for a new URL.
    public var needsNewURL: Bool { status == .failed && error?.code == .urlExpired }

    /// Where the finished file goes: `fileName` inside `request.directory`; nil while the download has
    /// no name yet.
    public var finalPath: String? { fileName.map { Paths.join(request.directory, $0) } }

    /// Bytes of this download on disk, as far as the record knows.
    public var completedLength: Int64 { segments.reduce(0) { $0 + $1.written } }

    /// Bytes this download will have when complete, once known: the entity's length, or the
    /// requested range's.
    public var expectedLength: Int64? {
        if request.range == nil, let totalLength { return totalLength }
        var sum: Int64 = 0
        for segment in segments {
            guard let length = segment.length else { return nil }
            sum += length
        }
        return sum
    }
}
