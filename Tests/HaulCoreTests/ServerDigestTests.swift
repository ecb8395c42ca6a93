import Foundation
import HaulCore
import Testing

/// The server's digests read from plain header values: RFC 9530's `Repr-Digest` and
/// `Content-Digest`, RFC 3230's `Digest`, which one is worth checking, and that nothing malformed
/// is ever more than ignored.
@Suite(.timeLimit(.minutes(1))) struct ServerDigestTests {
    // The digests of "hello" and "other", as base64 and hex.
    static let sha256Hello = (
        b64: "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
        hex: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )
    static let sha256Other = (
        b64: "2SmKENGwc1g33EvYXaxkGw887yekfl1TpU8vP1svz/o=",
        hex: "d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa"
    )
    static let sha512Hello = (
        b64: "m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw==",
        hex: "9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7"
            + "2323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043"
    )
    static let sha1Hello = (b64: "qvTGHdzF6KLavt4PO0gs2a6pQ00=", hex: "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d")
    static let md5Hello = (b64: "XUFAKrxLKna5cZ2REBfFkg==", hex: "5d41402abc4b2a76b9719d911017c592")

    func head(_ status: Int, _ headers: HTTPHeaderList) -> ResponseHead {
        ResponseHead(status: status, headers: headers, url: "http://h/file")
    }

    func head(_ headers: HTTPHeaderList) -> ResponseHead { head(206, headers) }

    func best(_ status: Int, _ headers: HTTPHeaderList) -> ServerDigest? {
        ServerDigest.best(ServerDigest.announced(in: head(status, headers)))
    }

    func best(_ headers: HTTPHeaderList) -> ServerDigest? { best(206, headers) }

    @Test func reprDigestPrefersSHA512() {
        let digest = best(["Repr-Digest": "sha-256=:\(Self.sha256Hello.b64):, sha-512=:\(Self.sha512Hello.b64):"])
        #expect(digest == ServerDigest(Checksum(algorithm: .sha512, hex: Self.sha512Hello.hex), from: .reprDigest))
        #expect(digest?.description == "sha-512 from Repr-Digest")
        // sha-256 alone, and two field lines read as one list.
        #expect(best(["Repr-Digest": "sha-256=:\(Self.sha256Hello.b64):"])?.checksum.hex == Self.sha256Hello.hex)
        let lines = HTTPHeaderList([
            .init(name: "Repr-Digest", value: "sha-256=:\(Self.sha256Hello.b64):"),
            .init(name: "repr-digest", value: "sha-512=:\(Self.sha512Hello.b64):"),
        ])
        #expect(best(lines)?.checksum.algorithm == .sha512)
    }

    /// RFC 3230's older field: names in any case, base64 values; sha-512 > sha-256 > sha-1 > md5.
    @Test func legacyDigestHeader() {
        #expect(
            best(["Digest": "MD5=\(Self.md5Hello.b64), SHA=\(Self.sha1Hello.b64)"])
                == ServerDigest(Checksum(algorithm: .sha1, hex: Self.sha1Hello.hex), from: .digest))
        #expect(
            best(["Digest": "md5=\(Self.md5Hello.b64)"])?.checksum == Checksum(algorithm: .md5, hex: Self.md5Hello.hex))
        #expect(
            best(["Digest": "MD5=\(Self.md5Hello.b64),SHA-256=\(Self.sha256Hello.b64)"])?.checksum.algorithm == .sha256)
        #expect(
            best(["Digest": "sha-512=\(Self.sha512Hello.b64), SHA-256=\(Self.sha256Hello.b64)"])?.checksum.algorithm
                == .sha512)
        // Padding left out is tolerated.
        #expect(best(["Digest": "SHA-256=\(Self.sha256Hello.b64.dropLast())"])?.checksum.hex == Self.sha256Hello.hex)
    }

    /// The strongest algorithm wins across fields; for the same algorithm Repr-Digest comes first.
    @Test func preferenceAcrossFields() {
        let stronger = best([
            "Repr-Digest": "sha-256=:\(Self.sha256Hello.b64):", "Digest": "SHA-512=\(Self.sha512Hello.b64)",
        ])
        #expect(stronger?.field == .digest && stronger?.checksum.algorithm == .sha512)
        let same = best([
            "Digest": "SHA-256=\(Self.sha256Hello.b64)", "Repr-Digest": "sha-256=:\(Self.sha256Hello.b64):",
        ])
        #expect(same?.field == .reprDigest)
    }

    /// A Content-Digest is of the content: the whole representation only in a 200 without a
    /// content coding. A 206's is of its part, and is ignored.
    @Test func contentDigestOnlyOnAWhole200() {
        let field = "sha-256=:\(Self.sha256Hello.b64):"
        #expect(best(200, ["Content-Digest": field])?.field == .contentDigest)
        #expect(best(200, ["Content-Digest": field, "Content-Encoding": "identity"])?.field == .contentDigest)
        #expect(best(206, ["Content-Digest": field]) == nil)
        #expect(best(200, ["Content-Digest": field, "Content-Encoding": "gzip"]) == nil)
        // Repr-Digest and Digest describe the whole representation, on a 206 too.
        #expect(
            best(206, ["Repr-Digest": field, "Content-Digest": "sha-512=:\(Self.sha512Hello.b64):"])?.field
                == .reprDigest)
        #expect(best(206, ["Digest": "SHA-256=\(Self.sha256Hello.b64)"])?.field == .digest)
    }

    /// Whatever cannot be read is ignored: no digest, no error, no crash.
    @Test(arguments: [
        "sha-256=:not base64!:",
        "sha-256=:YWJj:", // three bytes: not a sha-256
        "sha-256=\(sha256Hello.b64)", // a token, not a byte sequence
        "SHA-256=:\(sha256Hello.b64):", // keys are lowercase: the field is invalid
        "sha-256=:\(sha256Hello.b64):,", // a trailing comma invalidates the whole field
        "sha-256=:\(sha256Hello.b64):, sha-512=:oops",
        "sha-256=:\(sha256Hello.b64)",
        "sha-256=:\(sha256Hello.b64): garbage",
        "id-sha-256=:\(sha256Hello.b64):",
        "md5=:\(md5Hello.b64):", // not an RFC 9530 algorithm
        "sha-256=:AB=C:",
        "sha-256=:A:",
        "sha-256=\"text\"",
        "=:\(sha256Hello.b64):",
        "",
        ",",
        "sha-256=:\(sha256Hello.b64):;foo=\"unterminated",
        "sha-256=(:\(sha256Hello.b64):)",
    ])
    func malformedReprDigestIsIgnored(_ value: String) {
        #expect(ServerDigest.announced(in: head(["Repr-Digest": value])).isEmpty, "\(value)")
    }

    @Test(arguments: [
        "SHA-256", "SHA-256=", "MD5=abc", "SHA-256=!!!", "UNIXsum=30637", "SHA-256=\(sha1Hello.b64)",
        "SHA-256=:\(sha256Hello.b64):", "=\(sha256Hello.b64)", ",,,", "SHA-512=\(sha256Hello.b64)",
    ])
    func malformedLegacyDigestIsIgnored(_ value: String) {
        #expect(ServerDigest.announced(in: head(["Digest": value])).isEmpty, "\(value)")
    }

    /// Valid structure around the digest is skipped over: parameters, other members and types,
    /// inner lists; a key given twice counts once, the last.
    @Test func otherMembersAndParametersAreSkipped() {
        let value =
            "unixsum=30637;a=1;b=?0, x=(1 2.5 \"s\" tok);p=@12, sha-256=:\(Self.sha256Other.b64):;q=\"a\\\"b\", "
            + "y=%\"disp\", sha-256=:\(Self.sha256Hello.b64):, flag"
        let found = ServerDigest.announced(in: head(["Repr-Digest": value]))
        #expect(found == [ServerDigest(Checksum(algorithm: .sha256, hex: Self.sha256Hello.hex), from: .reprDigest)])
        // A bad member in Digest costs only that member.
        #expect(best(["Digest": "SHA-256=!!, MD5=\(Self.md5Hello.b64)"])?.checksum.algorithm == .md5)
    }

    /// Every cut and every odd character in a valid field: never a crash, and whatever is found
    /// is a digest of the right length.
    @Test func mangledFieldsNeverCrash() {
        let valid = "sha-256=:\(Self.sha256Hello.b64):, sha-512=:\(Self.sha512Hello.b64):"
        let characters = Array(valid)
        for cut in 0...characters.count {
            for replacement in ["", ":", ",", "=", "\"", "(", ";", " ", "é", "\u{0}"] {
                var mangled = characters
                if cut < mangled.count {
                    mangled[cut] = replacement.first ?? mangled[cut]
                } else {
                    mangled.append(contentsOf: replacement)
                }
                let text = replacement.isEmpty ? String(characters[..<cut]) : String(mangled)
                for name in ["Repr-Digest", "Digest"] {
                    for digest in ServerDigest.announced(
                        in: head(200, HTTPHeaderList([.init(name: name, value: text)])))
                    {
                        #expect(digest.checksum.hex.count == digest.checksum.algorithm.byteCount * 2)
                    }
                }
            }
        }
    }

    // MARK: Two responses

    @Test func reconcilingTwoResponses() {
        let sha256 = ServerDigest(Checksum(algorithm: .sha256, hex: Self.sha256Hello.hex), from: .reprDigest)
        let other256 = ServerDigest(Checksum(algorithm: .sha256, hex: Self.sha256Other.hex), from: .digest)
        let sha512 = ServerDigest(Checksum(algorithm: .sha512, hex: Self.sha512Hello.hex), from: .reprDigest)
        let md5 = ServerDigest(Checksum(algorithm: .md5, hex: Self.md5Hello.hex), from: .digest)
        #expect(ServerDigest.reconcile(known: nil, announced: []) == .keep)
        #expect(ServerDigest.reconcile(known: nil, announced: [md5, sha256]) == .take(sha256))
        #expect(ServerDigest.reconcile(known: sha256, announced: []) == .keep)
        #expect(ServerDigest.reconcile(known: sha256, announced: [sha256]) == .keep)
        // The same digest from another field is the same digest.
        let sameFromDigest = ServerDigest(sha256.checksum, from: .digest)
        #expect(ServerDigest.reconcile(known: sha256, announced: [sameFromDigest]) == .keep)
        #expect(ServerDigest.reconcile(known: sha256, announced: [md5]) == .keep)
        #expect(ServerDigest.reconcile(known: sha256, announced: [sha512]) == .take(sha512))
        #expect(
            ServerDigest.reconcile(known: sha256, announced: [sha512, other256])
                == .conflict(known: sha256, announced: other256))
    }

    // MARK: What is verified

    @Test func theRequestsChecksumWinsAndARangeChecksNoServerDigest() throws {
        let url = try RemoteURL("http://h/file")
        let digest = ServerDigest(Checksum(algorithm: .sha512, hex: Self.sha512Hello.hex), from: .reprDigest)
        var record = DownloadRecord(
            id: DownloadID(rawValue: "1"),
            request: try DownloadRequest(url: url, destination: .directory("/tmp")), createdAt: 0)
        #expect(record.expectedDigest == nil)
        record.serverDigest = digest
        #expect(record.expectedDigest == ExpectedDigest(digest.checksum, from: .server(.reprDigest)))
        #expect(record.expectedDigest?.description == "sha-512 from Repr-Digest")
        let checksum = Checksum(algorithm: .md5, hex: Self.md5Hello.hex)
        record.request.checksum = checksum
        #expect(record.expectedDigest == ExpectedDigest(checksum, from: .request))
        #expect(record.expectedDigest?.description == "md5 from checksum")
        record.request.checksum = nil
        record.request.range = ByteRange(start: 0, end: 9)
        #expect(record.expectedDigest == nil)
    }

    /// The fleet keeps records as JSON: the digest goes with them, and a record written by a
    /// haul that knew none reads as having none.
    @Test func theDigestTravelsInTheRecordsJSON() throws {
        var record = DownloadRecord(
            id: DownloadID(rawValue: "1"),
            request: try DownloadRequest(url: try RemoteURL("http://h/file"), destination: .directory("/tmp")),
            createdAt: 0)
        let before = try JSONEncoder().encode(record)
        #expect(!String(decoding: before, as: UTF8.self).contains("serverDigest"))
        #expect(try JSONDecoder().decode(DownloadRecord.self, from: before).serverDigest == nil)
        record.serverDigest = ServerDigest(Checksum(algorithm: .sha256, hex: Self.sha256Hello.hex), from: .digest)
        #expect(try JSONDecoder().decode(DownloadRecord.self, from: JSONEncoder().encode(record)) == record)
    }

    @Test func checksumTakesSHA512() throws {
        #expect(
            try Checksum(parsing: "sha-512=\(Self.sha512Hello.hex.uppercased())")
                == Checksum(algorithm: .sha512, hex: Self.sha512Hello.hex))
        #expect(try Checksum(parsing: "SHA512=\(Self.sha512Hello.hex)").algorithm == .sha512)
        #expect(throws: HaulError.self) { try Checksum(parsing: "sha-512=\(Self.sha256Hello.hex)") }
    }
}
