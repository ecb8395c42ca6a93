import Testing

@testable import HaulCore

@Suite(.timeLimit(.minutes(2))) struct ParsingTests {
    @Test func byteRanges() {
        #expect(ByteRange(parsing: "0-99") == ByteRange(start: 0, end: 99))
        #expect(ByteRange(parsing: "bytes=100-") == ByteRange(start: 100))
        #expect(ByteRange(parsing: "5-5")?.count == 1)
        #expect(ByteRange(parsing: "9-3") == nil)
        #expect(ByteRange(parsing: "-5") == nil)
        #expect(ByteRange(parsing: "a-b") == nil)
        #expect(ByteRange(start: 7, end: nil).description == "7-")
    }

    @Test func contentRanges() {
        #expect(ContentRange(parsing: "bytes 100-199/1000") == ContentRange(range: 100...199, total: 1000))
        #expect(ContentRange(parsing: "bytes 0-9/*") == ContentRange(range: 0...9, total: nil))
        #expect(ContentRange(parsing: "bytes */1000") == ContentRange(range: nil, total: 1000))
        #expect(ContentRange(parsing: "bytes 10-5/100") == nil)
        #expect(ContentRange(parsing: "bytes 0-100/100") == nil, "last byte past the end")
        #expect(ContentRange(parsing: "items 0-1/2") == nil)
        #expect(ContentRange(parsing: "bytes */*") == nil)
    }

    @Test func urls() throws {
        let url = try RemoteURL("https://example.com:8443/a/b%20c.iso?x=1#frag")
        #expect(url.scheme == "https")
        #expect(url.host == "example.com")
        #expect(url.path == "/a/b%20c.iso")
        #expect(url.lastPathComponent == "b c.iso")
        #expect(try RemoteURL("http://[::1]:8080/").host == "[::1]")
        #expect(try RemoteURL("http://host").lastPathComponent == nil)
    }

    @Test(arguments: [
        ("ftp://example.com/x", HaulError.Code.unsupportedScheme),
        ("file:///etc/passwd", .unsupportedScheme),
        ("example.com/x", .badURL),
        ("http://", .badURL),
        ("http://host:99999/", .badURL),
        ("http://host:abc/", .badURL),
        ("http://ho st/", .badURL),
        ("", .badURL),
    ])
    func badURLs(text: String, code: HaulError.Code) {
        #expect {
            try RemoteURL(text)
        } throws: { error in
            (error as? HaulError)?.code == code
        }
    }

    /// What an error shows of a URL it could not take: credentials hidden, but a revision or a
    /// digest in a name of content shown as typed.
    @Test(arguments: [
        ("ftp://user:s3cret@example.com/x", "ftp://***@example.com/x"),
        ("ftp://user:s3/cret@example.com/x", "ftp://***@example.com/x"),
        ("hf://org/repo@v1", "hf://org/repo@v1"),
        ("hf://datasets/org/data@refs%2Fpr%2F1/train.csv", "hf://datasets/org/data@refs%2Fpr%2F1/train.csv"),
        ("oci://ghcr.io/org/image@sha256:0123abcd", "oci://ghcr.io/org/image@sha256:0123abcd"),
        ("OCI://user:pw@registry.example/image:1", "OCI://***@registry.example/image:1"),
        ("s3://bucket/a@b.txt", "s3://bucket/a@b.txt"),
    ])
    func redactedURLs(text: String, shown: String) {
        #expect(RemoteURL.redacted(text) == shown)
        #expect {
            try RemoteURL(text)
        } throws: { error in
            (error as? HaulError)?.message.contains(shown) == true
        }
    }

    @Test func checksums() throws {
        let sha = try Checksum(parsing: "SHA256=" + String(repeating: "A", count: 64))
        #expect(sha.algorithm == .sha256)
        #expect(sha.hex == String(repeating: "a", count: 64))
        #expect(try Checksum(parsing: "md5=" + String(repeating: "0", count: 32)).algorithm == .md5)
        #expect(throws: HaulError.self) { try Checksum(parsing: "sha-256=abc") }
        #expect(throws: HaulError.self) { try Checksum(parsing: "crc32=00000000") }
        #expect(throws: HaulError.self) { try Checksum(parsing: "sha-1") }
    }

    @Test func retryAfter() {
        #expect(RetryAfter.parse("120", nowSecondsSince1970: 0) == .seconds(120))
        // 1994-11-06 08:49:37 UTC is 784111777.
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:47 GMT", nowSecondsSince1970: 784_111_777) == .seconds(10))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:47 GMT", nowSecondsSince1970: 800_000_000) == .zero)
        #expect(RetryAfter.parse("soon", nowSecondsSince1970: 0) == nil)
    }

    @Test func backoffGrowsWithJitterAndCap() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(8))
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 0) == .milliseconds(500))
        #expect(policy.delay(afterFailures: 1, retryAfter: nil, jitter: 1) == .seconds(1))
        #expect(policy.delay(afterFailures: 3, retryAfter: nil, jitter: 1) == .seconds(4))
        #expect(policy.delay(afterFailures: 10, retryAfter: nil, jitter: 1) == .seconds(8))
        #expect(policy.delay(afterFailures: 2, retryAfter: .seconds(30), jitter: 0.5) == .seconds(30))
        #expect(policy.delay(afterFailures: 2, retryAfter: .seconds(9999), jitter: 0.5) == policy.maxRetryAfter)
    }

    @Test func speedMeterSmooths() {
        var meter = SpeedMeter(halfLife: 1)
        meter.record(bytes: 0, at: 0)
        meter.record(bytes: 1000, at: 1)
        #expect(meter.bytesPerSecond == 1000)
        meter.record(bytes: 1000, at: 2)
        #expect(abs(meter.bytesPerSecond - 500) < 1, "one half-life halves the old rate")
        let progress = Progress(completed: 250, total: 1000, bytesPerSecond: 250)
        #expect(progress.fraction == 0.25)
        #expect(progress.secondsRemaining == 3)
    }
}
