import HaulCore
import Testing

/// What the machine does with the digests a server announces, with plain values: which
/// responses teach one, that it is stored before the body, that two that disagree mean another
/// entity, and what the finished file is checked against.
@Suite(.timeLimit(.minutes(1))) struct DigestMachineTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")
    let mirror = try! RemoteURL("http://m/file")
    let noFiles = Machine.LocalFiles(partSize: nil, published: false)
    let hello = ServerDigestTests.sha256Hello
    let other = ServerDigestTests.sha256Other

    func machine(
        connections: Int = 1, range: ByteRange? = nil, checksum: Checksum? = nil, mirrors: [RemoteURL] = [],
        record: DownloadRecord? = nil
    ) throws -> Machine {
        let request = try DownloadRequest(
            url: url, destination: .directory("/tmp"), range: range, checksum: checksum,
            connections: connections, mirrors: mirrors)
        var record = record ?? DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        return Machine(
            record: record,
            settings: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1)), minimumSegment: 100, minimumSteal: 10,
                checkpointInterval: 1_000_000, overlap: 50, tickInterval: 0.25, piecesPerConnection: 0,
                httpVersions: .http1_1))
    }

    func partial(
        _ start: Int64, _ end: Int64, of total: Int64 = 1000, _ extra: HTTPHeaderList = [:],
        from source: RemoteURL? = nil
    ) -> ResponseHead {
        var headers: HTTPHeaderList = ["Content-Range": "bytes \(start)-\(end)/\(total)", "ETag": "\"a\""]
        for field in extra { headers.add(name: field.name, value: field.value) }
        return ResponseHead(status: 206, headers: headers, url: (source ?? url).absoluteString)
    }

    func whole(_ extra: HTTPHeaderList) -> ResponseHead {
        var headers: HTTPHeaderList = ["Content-Length": "1000", "ETag": "\"a\""]
        for field in extra { headers.add(name: field.name, value: field.value) }
        return ResponseHead(status: 200, headers: headers, url: url.absoluteString)
    }

    func repr(_ value: (b64: String, hex: String)) -> HTTPHeaderList { ["Repr-Digest": "sha-256=:\(value.b64):"] }

    func sha256(_ value: (b64: String, hex: String), _ field: ServerDigest.Field = .reprDigest) -> ServerDigest {
        ServerDigest(Checksum(algorithm: .sha256, hex: value.hex), from: field)
    }

    func restarts(_ actions: [Machine.Action]) -> [RestartCause] {
        actions.compactMap { if case .notify(.restarted(_, let cause)) = $0 { cause } else { nil } }
    }

    /// A whole 200's Content-Digest is of the whole file: stored with the record before the
    /// body, verified at the end; a mismatch stores the download empty, cuts the `.part` and fails.
    @Test func aWhole200TeachesItsContentDigestBeforeTheBody() throws {
        var machine = try machine()
        _ = machine.start(noFiles, now: 0)
        let actions = machine.responseReceived(
            0, whole(["Content-Digest": "sha-256=:\(hello.b64):"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(actions == [.persist, .truncate(to: 0), .receive(0)])
        #expect(machine.persistentRecord.serverDigest == sha256(hello, .contentDigest))
        #expect(machine.digestToVerify == ExpectedDigest(sha256(hello).checksum, from: .server(.contentDigest)))
        _ = machine.received(0, count: 1000)
        #expect(
            machine.bodyEnded(0, jitter: 0) == [
                .notify(.transferEnded(finishBytes: 1000)), .checkpoint(epoch: machine.epoch), .verify(.part),
            ])
        let failed = machine.verified(HaulError(.digestMismatch, "wrong"))
        #expect(Array(failed.prefix(2)) == [.persist, .truncate(to: 0)])
        #expect(failed.last == .finish(.failed(HaulError(.digestMismatch, "wrong"))))
        #expect(machine.record.status == .failed && machine.record.error?.code == .digestMismatch)
        #expect(machine.persistentRecord.serverDigest == nil && machine.persistentRecord.completedLength == 0)
    }

    /// A 206's Content-Digest is of its part: ignored. Its Repr-Digest is of the whole file.
    @Test func aPartsContentDigestIsIgnoredItsReprDigestIsNot() throws {
        var ignored = try machine(connections: 2)
        _ = ignored.start(noFiles, now: 0)
        _ = ignored.responseReceived(
            0, partial(0, 99, ["Content-Digest": "sha-256=:\(hello.b64):"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(ignored.record.serverDigest == nil)
        #expect(ignored.digestToVerify == nil)

        var learned = try machine(connections: 2)
        _ = learned.start(noFiles, now: 0)
        _ = learned.responseReceived(0, partial(0, 99, repr(hello)), nowSecondsSince1970: 0, jitter: 0)
        #expect(learned.record.serverDigest == sha256(hello))
        // The other connections' answers agree: nothing changes.
        let second = learned.responseReceived(1, partial(500, 999, repr(hello)), nowSecondsSince1970: 0, jitter: 0)
        #expect(restarts(second).isEmpty && second.contains(.receive(1)))
    }

    /// Two connections whose answers give the same algorithm different values saw two files:
    /// every connection closes and the download starts over from byte 0, forgetting the digest.
    @Test func twoConnectionsThatDisagreeStartOver() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 999, repr(hello)), nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 100)
        let changed = machine.responseReceived(1, partial(500, 999, repr(other)), nowSecondsSince1970: 0, jitter: 0)
        #expect(restarts(changed) == [.digestChanged])
        #expect(changed.contains(.close(0)))
        #expect(machine.record.serverDigest == nil)
        let again = machine.transferFailed(0, HaulError(.interrupted, "closed"), jitter: 0)
        #expect(Array(again.prefix(2)) == [.persist, .truncate(to: 0)])
        let plan = try #require(again.compactMap { if case .request(_, let plan) = $0 { plan } else { nil } }.first)
        #expect(plan.range?.start ?? 0 == 0 && plan.ifRange == nil)
    }

    /// A resume keeps the stored digest when the resumed answer sends none, and starts over
    /// when the resumed answer gives another: the file changed though its validator did not.
    @Test func aResumeKeepsTheStoredDigestAndAContradictionStartsOver() throws {
        var old = try machine()
        _ = old.start(noFiles, now: 0)
        _ = old.responseReceived(0, whole(repr(hello)), nowSecondsSince1970: 0, jitter: 0)
        _ = old.received(0, count: 400)
        _ = old.synced(epoch: old.epoch, written: [0: 400])
        let stored = old.persistentRecord
        #expect(stored.serverDigest == sha256(hello))

        var silent = try machine(record: stored)
        let start = silent.start(Machine.LocalFiles(partSize: 400, published: false), now: 0)
        #expect(start.contains { if case .request(0, let plan) = $0 { plan.range?.start == 400 } else { false } })
        let resumed = silent.responseReceived(0, partial(400, 999), nowSecondsSince1970: 0, jitter: 0)
        #expect(resumed.contains(.receive(0)))
        #expect(silent.digestToVerify == ExpectedDigest(sha256(hello).checksum, from: .server(.reprDigest)))

        var contradicted = try machine(record: stored)
        _ = contradicted.start(Machine.LocalFiles(partSize: 400, published: false), now: 0)
        let actions = contradicted.responseReceived(
            0, partial(400, 999, repr(other)), nowSecondsSince1970: 0, jitter: 0)
        #expect(restarts(actions) == [.digestChanged])
        #expect(actions.contains(.truncate(to: 0)))
        #expect(!actions.contains(.receive(0)), "the contradicting answer's body is never written")
        #expect(contradicted.record.serverDigest == nil)
    }

    /// A stronger algorithm from a later answer replaces a weaker one; a weaker one is not taken.
    @Test func aStrongerDigestReplacesAWeakerOne() throws {
        var machine = try machine(connections: 2)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(
            0, partial(0, 99, ["Digest": "MD5=\(ServerDigestTests.md5Hello.b64)"]), nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.serverDigest?.checksum.algorithm == .md5)
        _ = machine.responseReceived(
            1, partial(500, 999, ["Repr-Digest": "sha-512=:\(ServerDigestTests.sha512Hello.b64):"]),
            nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.serverDigest?.checksum.algorithm == .sha512)
        #expect(machine.record.serverDigest?.field == .reprDigest)
    }

    /// `--range`: the file is part of the representation; its digest is not the file's.
    @Test func aRangeLearnsNothing() throws {
        var machine = try machine(range: ByteRange(start: 0, end: 99))
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, partial(0, 99, repr(hello)), nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.serverDigest == nil)
        #expect(machine.digestToVerify == nil)
    }

    /// With the request's own checksum the server's digest is still learned (a change of it is
    /// still a change of the file), but the checksum is what is verified.
    @Test func theRequestsChecksumIsVerifiedInstead() throws {
        let checksum = Checksum(algorithm: .sha1, hex: ServerDigestTests.sha1Hello.hex)
        var machine = try machine(checksum: checksum)
        _ = machine.start(noFiles, now: 0)
        _ = machine.responseReceived(0, whole(repr(other)), nowSecondsSince1970: 0, jitter: 0)
        #expect(machine.record.serverDigest == sha256(other))
        #expect(machine.digestToVerify == ExpectedDigest(checksum, from: .request))
    }

    /// A mirror's probe is compared, never learned from: one that announces another digest is
    /// dropped before a byte of it is compared; one that announces none is proven by its bytes.
    @Test func aMirrorWhoseProbeAnnouncesAnotherDigestIsDropped() throws {
        for (announced, dropped) in [(repr(other), true), (HTTPHeaderList(), false), (repr(hello), false)] {
            var machine = try machine(connections: 2, mirrors: [mirror])
            _ = machine.start(noFiles, now: 0)
            _ = machine.responseReceived(0, partial(0, 99, repr(hello)), nowSecondsSince1970: 0, jitter: 0)
            _ = machine.received(0, count: 100)
            let next = machine.bodyEnded(0, jitter: 0)
            let probe = try #require(next.compactMap { if case .request(0, let plan) = $0 { plan } else { nil } }.first)
            #expect(probe.url == mirror && probe.range == ByteRange(start: 50, end: 99))
            let answer = machine.responseReceived(
                0, partial(50, 99, announced, from: mirror), nowSecondsSince1970: 0, jitter: 0)
            let notices = answer.compactMap { if case .notify(.sourceDropped(let url, _)) = $0 { url } else { nil } }
            #expect(notices == (dropped ? [mirror.absoluteString] : []), "\(answer)")
            #expect(machine.record.serverDigest == sha256(hello))
            #expect(restarts(answer).isEmpty)
        }
    }
}
