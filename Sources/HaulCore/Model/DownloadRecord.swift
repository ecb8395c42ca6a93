/// Everything Haul persists about one download: the request, where it stands, and the facts
/// learned from the server that make a safe resume possible (final URL, validator, length).
/// `segments[i].written` is only ever stored after those bytes were fsynced (DESIGN rule 2).
public struct DownloadRecord: Hashable, Codable, Sendable {
    public var id: DownloadID
    public var request: DownloadRequest
    public var status: DownloadStatus
    /// The final file's name inside `request.directory`, fixed by the first response (or `-o`).
    public var fileName: String?
    /// The URL that answered last, after redirects.
    public var finalURL: String?
    public var validator: EntityValidator?
    /// Length of the whole remote entity, once known.
    public var totalLength: Int64?
    /// The digest of the whole representation the server announced (`Repr-Digest`, `Digest`,
    /// a full 200's `Content-Digest`), checked before publishing unless the request has a
    /// checksum (`expectedDigest`). Stored, so a resume still checks it when the resumed
    /// response sends none. Forgotten with the entity.
    public var serverDigest: ServerDigest?
    public var segments: [Segment]
    /// Why it failed, when it did.
    public var error: HaulError?
    /// Seconds since 1970, set by whoever creates the record (the core reads no clock).
    public var createdAt: Int64
    /// Place in the queue among downloads of the same priority, lower first. Starts as the
    /// time added (in microseconds); moving a download up or down changes it.
    public var position: Int64

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

    /// Where the finished file goes, once the download has its name.
    /// Failed because its URL expired midway: it waits, its bytes kept, for a new URL.
    public var needsNewURL: Bool { status == .failed && error?.code == .urlExpired }

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
