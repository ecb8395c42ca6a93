/// Records a store parsed from their JSON (`StoredRecord.parse`), reused while a row's JSON is
/// the same text: a listing reads every row again (`tellWaiting(0,1000)` a thousand), parsing was
/// a third of its time, and most rows had not changed since the last listing.
///
/// Keyed by the text itself, compared byte for byte (not by `String`'s `==`, which takes two
/// spellings of one accented name as equal where the file system does not), so it can never
/// answer for a row that changed, whoever changed it (another process sharing the database
/// too). The columns are applied to what it gives, every time (`StoredRecord.read(…parsed:…)`).
/// Bounded: past `capacity` entries it starts again from empty.
public struct StoredRecordCache: Sendable {
    private var entries: [String: (json: String, record: DownloadRecord)] = [:]
    /// The most records kept; one more (for a new id) empties the cache first.
    public let capacity: Int

    /// An empty cache that keeps at most `capacity` records.
    public init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// The record parsed from this same text before, if it was.
    public func record(id: String, json: String) -> DownloadRecord? {
        guard let entry = entries[id], Self.sameBytes(entry.json, json) else { return nil }
        return entry.record
    }

    /// Compared in their own storage: through `UTF8View`'s iterator this was slower than
    /// parsing a short record again.
    static func sameBytes(_ first: String, _ second: String) -> Bool {
        guard first.utf8.count == second.utf8.count else { return false }
        let compared = first.utf8.withContiguousStorageIfAvailable { one in
            second.utf8.withContiguousStorageIfAvailable { other in
                Self.sameBytes(UnsafeRawBufferPointer(one), UnsafeRawBufferPointer(other))
            }
        }
        return (compared ?? nil) ?? first.utf8.elementsEqual(second.utf8)
    }

    /// Eight bytes at a time (a byte-wise loop cost about 1.4 ns a byte).
    private static func sameBytes(_ one: UnsafeRawBufferPointer, _ other: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 8 <= one.count {
            if one.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                != other.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            {
                return false
            }
            offset += 8
        }
        while offset < one.count {
            if one[offset] != other[offset] { return false }
            offset += 1
        }
        return true
    }

    /// Keeps `record`, parsed from `json`, for the row `id`, in place of what was kept for it.
    /// A new id when the cache is full empties it first.
    public mutating func keep(_ record: DownloadRecord, id: String, json: String) {
        if entries.count >= capacity, entries[id] == nil { entries.removeAll(keepingCapacity: true) }
        entries[id] = (json, record)
    }

    /// How many records are kept now.
    public var count: Int { entries.count }
}
