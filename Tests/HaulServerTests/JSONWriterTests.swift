import Foundation
import HaulAPI
import HaulCore
import Testing

/// The hand-written `JSONWriter` must produce exactly what `JSONEncoder` (sorted keys, slashes
/// unescaped) produces for the same view: clients decode one or the other depending on the
/// endpoint, and a stray byte of difference is a broken client.
@Suite(.timeLimit(.minutes(1))) struct JSONWriterTests {
    static let hostile = [
        "plain", "", "quote\"in", "back\\slash", "new\nline\r\ttab", "nul\u{0}ctl\u{1}\u{8}\u{C}\u{1F}del\u{7F}",
        "non-ascii é ü 日本 😀 \u{2028}\u{2029}", "slash/and</script>", "\u{FEFF}bom", "%00%0d%0a",
    ]

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func record(_ text: String, status: DownloadStatus = .failed) throws -> DownloadRecord {
        let request = try DownloadRequest(
            url: RemoteURL(
                "http://example.com/\(text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "x")"),
            destination: .directory("/tmp/" + text.replacingOccurrences(of: "/", with: "_")),
            connections: 4, maxBytesPerSecond: status == .failed ? nil : 1000)
        var record = DownloadRecord(
            id: DownloadID(rawValue: "00112233aabbccdd"), request: request, createdAt: 1_700_000_000)
        record.status = status
        record.fileName = text.isEmpty ? nil : text.replacingOccurrences(of: "/", with: "_")
        record.error = status == .failed ? HaulError(.httpStatus, "server said: \(text)") : nil
        record.totalLength = status == .failed ? nil : 12345
        return record
    }

    @Test(arguments: hostile)
    func downloadViewMatchesJSONEncoder(_ text: String) throws {
        var expired = try Self.record(text, status: .failed)
        expired.error = HaulError(.urlExpired, "HTTP 403 after 10 bytes: \(text)")
        #expect(DownloadView(expired, live: nil).needsNewURL)
        var writer = JSONWriter()
        DownloadView(expired, live: nil).write(to: &writer)
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == String(decoding: try Self.encoder().encode(DownloadView(expired, live: nil)), as: UTF8.self))
        for (status, live) in [
            (DownloadStatus.failed, nil),
            (.running, Progress(completed: 77, total: 12345, bytesPerSecond: 1048576.25, connections: 3)),
            (.running, Progress(completed: 10, total: nil, bytesPerSecond: 2048, connections: 1)),
        ] {
            let view = DownloadView(try Self.record(text, status: status), live: live)
            var writer = JSONWriter()
            view.write(to: &writer)
            let expected = try Self.encoder().encode(view)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
            // And it reads back as the same view.
            #expect(try JSONDecoder().decode(DownloadView.self, from: Data(writer.bytes)) == view)
        }
    }

    @Test(arguments: hostile)
    func dynamicKeysAndArraysMatchJSONEncoder(_ text: String) throws {
        var writer = JSONWriter()
        writer.array([text, "b"]) { writer, value in
            writer.object { writer in writer.field(named: value, value + "!") }
        }
        let expected = try Self.encoder().encode([[text: text + "!"], ["b": "b!"]])
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    }

    @Test(arguments: [0.0, 1.0, 1.5, 123456789.0, 1e20, 0.1, 2.5e-7, 1048576.25, -3.0])
    func numbersMatchJSONEncoder(_ value: Double) throws {
        struct Box: Encodable { var speed: Double }
        var writer = JSONWriter()
        writer.object { $0.field("speed", value) }
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == String(decoding: try Self.encoder().encode(Box(speed: value)), as: UTF8.self))
    }

    @Test func everyKeyIsWrittenEvenWhenNull() throws {
        var view = DownloadView(try Self.record("x"), live: nil)
        view.totalLength = nil
        view.path = nil
        let object = try #require(try JSONSerialization.jsonObject(with: Self.encoder().encode(view)) as? [String: Any])
        #expect(
            object.keys.sorted() == [
                "completedLength", "connections", "createdAt", "directory", "error", "fileName", "host", "id",
                "maxBytesPerSecond", "maxConnections", "needsNewURL", "path", "priority", "sequential", "speed",
                "status", "totalLength", "url",
            ])
        #expect(object["totalLength"] is NSNull && object["path"] is NSNull && object["host"] is NSNull)
    }
}
