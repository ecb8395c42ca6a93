import Foundation
import HaulTesting
import Testing

/// ``Fault/brokenChunks(_:)`` puts exactly the broken framing on the wire, and real clients
/// refuse it: the test server reproduces the hostile servers of issue 19.
@Suite(.timeLimit(.minutes(2))) struct BrokenFramingTests {
    let payload = Payload(seed: 11, length: 100)

    /// The raw response split at the blank line: head lines and body bytes.
    func exchange(_ server: TestServer, range: String? = nil) throws -> (head: [String], body: [UInt8]) {
        let extra = range.map { "Range: bytes=\($0)\r\n" } ?? ""
        let bytes = try rawExchange(port: server.port, "GET /f HTTP/1.1\r\nHost: x\r\n\(extra)\r\n")
        let separator: [UInt8] = [13, 10, 13, 10]
        let end = try #require((0..<(bytes.count - 3)).first { Array(bytes[$0..<($0 + 4)]) == separator })
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        return (head, Array(bytes[(end + 4)...]))
    }

    @Test func aChunkSizeThatIsNotHex() async throws {
        try await withServer(Route(payload: payload, then: .brokenChunks(.badSize("zz", after: 10)))) { server in
            let (head, body) = try exchange(server)
            #expect(head.contains("Transfer-Encoding: Chunked"))
            #expect(!head.contains { $0.hasPrefix("Content-Length") })
            #expect(
                body == Array("a\r\n".utf8) + payload.bytes(0..<10) + Array("\r\nzz\r\n".utf8) + payload.bytes(10..<100)
            )
            let response = try await curl(server.url("/f"))
            #expect(response.exitCode == 56, "curl: bad chunk size") // CURLE_RECV_ERROR
        }
    }

    @Test func aChunkSizeNoBodyCanFill() async throws {
        try await withServer(Route(payload: payload, then: .brokenChunks(.badSize("7fffffffffffffff", after: 0)))) {
            server in
            let (_, body) = try exchange(server, range: "40-")
            #expect(body == Array("7fffffffffffffff\r\n".utf8) + payload.bytes(40..<100))
            let response = try await curl(server.url("/f"))
            #expect(response.exitCode != 0)
        }
    }

    @Test func noLastChunk() async throws {
        try await withServer(Route(payload: payload, then: .brokenChunks(.noLastChunk))) { server in
            let (head, body) = try exchange(server)
            #expect(head.first == "HTTP/1.1 200 OK")
            #expect(body == Array("64\r\n".utf8) + payload.bytes(0..<100) + Array("\r\n".utf8))
            let response = try await curl(server.url("/f"))
            #expect(response.exitCode == 18) // CURLE_PARTIAL_FILE
            #expect(response.body == payload.data(0..<100))
        }
    }
}
