import Foundation
import HaulCore
import Testing

@Suite(.timeLimit(.minutes(1))) struct StoredRecordCacheTests {
    func record(_ name: String) throws -> DownloadRecord {
        DownloadRecord(
            id: DownloadID(rawValue: "a"),
            request: try DownloadRequest(url: RemoteURL("http://h/x"), destination: .file("/tmp/\(name)")), createdAt: 1
        )
    }

    @Test func onlyTheSameBytesAreAnswered() throws {
        var cache = StoredRecordCache()
        let composed = try record("caf\u{E9}")
        let json = StoredRecord.json(composed)
        cache.keep(composed, id: "a", json: json)
        #expect(cache.record(id: "a", json: json) == composed)
        #expect(cache.record(id: "b", json: json) == nil)
        // One accented name spelled two ways: equal Strings, two different files on Linux.
        let decomposed = try record("cafe\u{301}")
        let other = StoredRecord.json(decomposed)
        #expect(other == json, "String's == takes them as one")
        #expect(cache.record(id: "a", json: other) == nil, "the cache does not")
        #expect(
            cache.record(id: "a", json: json.replacingOccurrences(of: "\"priority\":0", with: "\"priority\":1")) == nil)
    }

    @Test func itStartsAgainPastItsCapacity() throws {
        var cache = StoredRecordCache(capacity: 3)
        let one = try record("one")
        for id in ["a", "b", "c"] { cache.keep(one, id: id, json: "x") }
        cache.keep(one, id: "a", json: "y")
        #expect(cache.count == 3, "a kept id is replaced, not added")
        cache.keep(one, id: "d", json: "x")
        #expect(cache.count == 1 && cache.record(id: "d", json: "x") == one && cache.record(id: "a", json: "y") == nil)
    }
}
