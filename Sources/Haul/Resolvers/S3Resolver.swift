import HaulCore

/// Turns `s3://BUCKET/KEY` and `s3://BUCKET/PREFIX/` into the files to download: `HeadObject`
/// (with `x-amz-checksum-mode: ENABLED`) for each object's length and checksum, `ListObjectsV2`
/// (continued past each page of 1,000 keys) for a prefix, and the parts' lengths of a multipart
/// object whose checksum is of its parts. Its questions go through `transport`, signed with its
/// keys (`AsyncHTTPTransport.Configuration.awsCredentials`; none: unsigned, for a public
/// bucket); each file it gives is signed the same way, request by request, by the engine's
/// transport (`ResolvedFile.signing`). A bucket in another region than the one asked is asked
/// again in the region the store names (`x-amz-bucket-region`).
public struct S3Resolver: Sendable {
    /// AWS or another store, and its addressing style.
    public var endpoint: S3Endpoint
    /// The region asked first (`AWS_REGION`, the profile's, else `us-east-1`).
    public var region: String
    /// Sends the questions (its configuration's proxies, trust roots and keys apply).
    public var transport: AsyncHTTPTransport
    /// `HeadObject` questions in flight at once (a prefix's objects, a multipart object's parts).
    public var concurrency = 16

    /// A resolver asking `endpoint` through `transport`, first in `region`.
    public init(endpoint: S3Endpoint, region: String, transport: AsyncHTTPTransport) {
        self.endpoint = endpoint
        self.region = region
        self.transport = transport
    }

    /// The most keys a prefix may list: a wrong prefix should not queue a million downloads.
    public static let maxKeys = 1_000_000

    /// The files `name` stands for, in key order.
    ///
    /// - Throws: `HaulError`: `.httpStatus` for the store's refusals (no such key or bucket, 403
    ///   without keys or with wrong ones, nothing under a prefix), `.network` when it cannot be
    ///   reached, `.badRequest` for an answer that is not S3's.
    public func resolve(_ name: S3Name) async throws(HaulError) -> (files: [ResolvedFile], skipped: [SkippedPath]) {
        var region = region
        if !name.isPrefix {
            return (
                [
                    try await object(
                        bucket: name.bucket, key: name.key, path: Self.lastSegment(name.key), region: &region)
                ], []
            )
        }
        var objects: [S3Answers.ListedObject] = []
        var token: String?
        repeat {
            var query: [(name: String, value: String)] = [("list-type", "2"), ("prefix", name.key)]
            if let token { query.append(("continuation-token", token)) }
            let (head, body) = try await ask("GET", bucket: name.bucket, key: "", query: query, region: &region)
            guard head.status == 200 else { throw refusal(head, body: body, name: "s3://\(name.bucket)/\(name.key)") }
            let page = try S3Answers.listPage(String(decoding: body, as: UTF8.self))
            objects += page.objects
            token = page.continuation
            guard objects.count <= Self.maxKeys else {
                throw HaulError(.usage, "s3://\(name.bucket)/\(name.key) lists more than \(Self.maxKeys) keys")
            }
        } while token != nil
        var skipped: [SkippedPath] = []
        var wanted: [(key: String, path: String)] = []
        for object in objects {
            switch S3Answers.placement(key: object.key, prefix: name.key) {
            case .path(let path): wanted.append((object.key, path))
            case .folder: break
            case .skipped(let entry): skipped.append(entry)
            }
        }
        guard !wanted.isEmpty else {
            throw HaulError(
                .httpStatus, "s3://\(name.bucket)/\(name.key): no object under this prefix", httpStatus: 404)
        }
        let found = region
        let files = try await Self.concurrentMap(wanted, width: concurrency) { item throws(HaulError) in
            var asked = found
            return try await object(bucket: name.bucket, key: item.key, path: item.path, region: &asked)
        }
        return (files, skipped)
    }

    /// One object: its `HeadObject` and, for a checksum of parts, its parts' lengths.
    func object(bucket: String, key: String, path: String, region: inout String) async throws(HaulError) -> ResolvedFile
    {
        let shown = "s3://\(bucket)/\(key)"
        let (head, body) = try await ask(
            "HEAD", bucket: bucket, key: key, headers: ["x-amz-checksum-mode": "ENABLED"], region: &region)
        guard head.status == 200 else { throw refusal(head, body: body, name: shown) }
        guard let answer = S3Answers.Head(head.headers) else {
            throw HaulError(.badRequest, "\(shown): the store's answer has no length")
        }
        let url = try endpoint.url(bucket: bucket, key: key, region: region)
        var file = ResolvedFile(
            path: path, url: url, size: answer.length, signing: SigV4Scope(region: region))
        switch S3Answers.check(answer) {
        case .whole(let checksum): file.checksum = checksum
        case .lengthOnly: break
        case .composite(let hex, let count):
            let lengths = try await partLengths(bucket: bucket, key: key, count: count, region: region)
            if lengths.reduce(0, +) == answer.length {
                file.composite = try CompositeChecksum(
                    algorithm: .sha256, partLengths: lengths, hex: hex)
            } else {
                throw HaulError(
                    .badRequest,
                    "\(shown): its parts add up to \(lengths.reduce(0, +)) bytes, but the object has \(answer.length)")
            }
        }
        return file
    }

    /// The lengths of a multipart object's parts, from `HeadObject` with `partNumber` (the first
    /// also tells how many there are when `count` is 0).
    func partLengths(bucket: String, key: String, count: Int, region: String) async throws(HaulError) -> [Int64] {
        let first = try await part(1, bucket: bucket, key: key, region: region)
        let total = count > 0 ? count : (first.count ?? 1)
        guard total <= 10_000 else {
            throw HaulError(.badRequest, "s3://\(bucket)/\(key): \(total) parts; S3 allows 10,000")
        }
        let rest = try await Self.concurrentMap(Array(2...max(2, total)).prefix(total - 1), width: concurrency) {
            number throws(HaulError) in try await part(number, bucket: bucket, key: key, region: region).length
        }
        return [first.length] + rest
    }

    /// One part's length, and the count of parts when the store says.
    func part(_ number: Int, bucket: String, key: String, region: String) async throws(HaulError) -> (
        length: Int64, count: Int?
    ) {
        var asked = region
        let (head, body) = try await ask(
            "HEAD", bucket: bucket, key: key, query: [("partNumber", String(number))], region: &asked)
        guard head.status == 200 || head.status == 206, let length = head.headers["Content-Length"].flatMap(Int64.init),
            length > 0
        else { throw refusal(head, body: body, name: "s3://\(bucket)/\(key) (part \(number))") }
        return (length, head.headers["x-amz-mp-parts-count"].flatMap(Int.init))
    }

    /// One question to the store, asked again in the bucket's region when the store names
    /// another (once).
    func ask(
        _ method: String, bucket: String, key: String, query: [(name: String, value: String)] = [],
        headers: HTTPHeaderList = [:], region: inout String
    ) async throws(HaulError) -> (ResponseHead, [UInt8]) {
        var switched = false
        while true {
            let url = try endpoint.url(bucket: bucket, key: key, region: region, query: query)
            let plan = RequestPlan(
                url: url, range: nil, ifRange: nil, headers: headers, signing: SigV4Scope(region: region),
                method: method)
            let (head, body) = try await transport.answer(plan, limit: 16 << 20)
            if !switched, let other = S3Answers.otherRegion(status: head.status, headers: head.headers, asked: region) {
                region = other
                switched = true
                continue
            }
            return (head, body)
        }
    }

    /// The store's refusal as an error: its status, and its code and message when it sent them.
    func refusal(_ head: ResponseHead, body: [UInt8], name: String) -> HaulError {
        let said = S3Answers.error(String(decoding: body, as: UTF8.self))
        let what: String
        switch (head.status, said?.code) {
        case (404, "NoSuchBucket"): what = "no such bucket"
        case (404, _): what = "no such key"
        case (403, _) where transport.configuration.awsCredentials == nil:
            what = "access denied without AWS keys (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)"
        case (403, "SignatureDoesNotMatch"): what = "the store says the signature does not match: a wrong secret key?"
        case (403, "InvalidAccessKeyId"): what = "the store does not know this access key"
        case (403, _): what = "access denied"
        case (301, _), (400, "AuthorizationHeaderMalformed"):
            what =
                "the bucket is in another region than the one asked, and the store did not say which (set AWS_REGION)"
        default: what = "HTTP \(head.status)\(ResponseCheck.reason(head.status))"
        }
        let detail = said.map { " (\($0.code)\($0.message.isEmpty ? "" : ": \($0.message)"))" } ?? ""
        return HaulError(.httpStatus, "\(name): \(what)\(detail)", httpStatus: head.status)
    }

    /// A key's last segment: the file's name for `s3://BUCKET/KEY`.
    static func lastSegment(_ key: String) -> String {
        String(key.split(separator: "/").last ?? Substring(key))
    }

    /// `transform` of each element, at most `width` at once, in the elements' order; the first
    /// error ends it.
    static func concurrentMap<Element: Sendable, Result: Sendable>(
        _ elements: some Collection<Element>, width: Int,
        _ transform: @escaping @Sendable (Element) async throws(HaulError) -> Result
    ) async throws(HaulError) -> [Result] {
        let items = Array(elements)
        do {
            return try await withThrowingTaskGroup(of: (Int, Result).self) { group in
                var results = [Result?](repeating: nil, count: items.count)
                var next = 0
                while next < min(width, items.count) {
                    let index = next
                    group.addTask { (index, try await transform(items[index])) }
                    next += 1
                }
                while let (index, result) = try await group.next() {
                    results[index] = result
                    if next < items.count {
                        let index = next
                        group.addTask { (index, try await transform(items[index])) }
                        next += 1
                    }
                }
                return results.compactMap { $0 }
            }
        } catch let error as HaulError {
            throw error
        } catch {
            throw HaulError(.internal, "\(error)", underlying: error)
        }
    }
}
