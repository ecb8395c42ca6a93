import HaulCore
import Testing

/// Metalink v4 and v3 read with plain values: URLs in order of preference, digests, sizes and
/// names; malformed and hostile documents refused with one clear message.
@Suite(.timeLimit(.minutes(1))) struct MetalinkTests {
    let sha256 = String(repeating: "ab", count: 32)
    let sha1 = String(repeating: "cd", count: 20)

    @Test func version4() throws {
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <published>2026-11-26T10:00:00Z</published>
              <file name="../dir/ubuntu &amp; more.iso">
                <size>300000</size>
                <hash type="sha-1">\(sha1)</hash>
                <hash type="sha-256">\(sha256.uppercased())</hash>
                <hash type="blake3">whatever</hash>
                <pieces length="262144" type="sha-256"><hash>\(sha256)</hash><hash>\(sha256.uppercased())</hash></pieces>
                <url location="de" priority="2">http://b.example/ubuntu.iso</url>
                <url priority="1">https://a.example/ubuntu.iso?x=1&amp;y=2</url>
                <url priority="3">ftp://c.example/ubuntu.iso</url>
                <metaurl mediatype="torrent">http://a.example/ubuntu.torrent</metaurl>
              </file>
              <file name="second"><url>http://a.example/second</url></file>
            </metalink>
            """
        let metalink = try Metalink.parse(document)
        #expect(metalink.files.count == 2)
        let file = metalink.files[0]
        #expect(file.name == "ubuntu & more.iso")
        #expect(file.size == 300_000)
        #expect(
            file.urls.map(\.absoluteString) == ["https://a.example/ubuntu.iso?x=1&y=2", "http://b.example/ubuntu.iso"])
        #expect(file.checksums == [Checksum(algorithm: .sha256, hex: sha256), Checksum(algorithm: .sha1, hex: sha1)])
        #expect(file.pieces == (try PieceHashes(length: 262_144, algorithm: .sha256, hashes: [sha256, sha256])))
        #expect(metalink.files[1].checksums.isEmpty && metalink.files[1].size == nil)
    }

    @Test func version3() throws {
        let document = """
            <?xml version="1.0" encoding="utf-8"?>
            <metalink version="3.0" xmlns="http://www.metalinker.org/">
              <files>
                <file name="debian.iso">
                  <size>1000</size>
                  <verification>
                    <hash type="sha256">\(sha256)</hash>
                    <pieces length="512" type="sha1"><hash piece="0">\(sha1)</hash><hash piece="1">\(sha1)</hash></pieces>
                  </verification>
                  <resources>
                    <url type="http" location="us" preference="10">http://slow.example/debian.iso</url>
                    <url type="http" preference="100"><![CDATA[http://fast.example/debian.iso?a=1&b=2]]></url>
                  </resources>
                </file>
              </files>
            </metalink>
            """
        let file = try #require(try Metalink.parse(document).files.first)
        #expect(file.name == "debian.iso")
        #expect(
            file.urls.map(\.absoluteString) == [
                "http://fast.example/debian.iso?a=1&b=2", "http://slow.example/debian.iso",
            ])
        #expect(file.checksums == [Checksum(algorithm: .sha256, hex: sha256)])
        #expect(file.pieces?.length == 512 && file.pieces?.algorithm == .sha1 && file.pieces?.hashes.count == 2)
    }

    @Test(arguments: [
        ("", "no root element"),
        ("<metalink><file name=\"a\"><url>http://a/</url></file>", "is not closed"),
        ("<html><body/></html>", "the root element is <html>"),
        ("<metalink></metalink>", "lists no file"),
        (
            "<metalink><file name=\"a\"><url>ftp://a/x</url></file></metalink>",
            "a: no http or https URL in the Metalink"
        ),
        ("<metalink><file name=\"..\"><url>http://a/x</url></file></metalink>", "no usable name"),
        (
            "<metalink><file name=\"a\"><size>-5</size><url>http://a/x</url></file></metalink>",
            "is not a number of bytes"
        ),
        ("<!DOCTYPE m [<!ENTITY a \"aaaa\">]><metalink/>", "a document type declaration is not accepted"),
        ("<metalink><file name=\"a &bomb;\"><url>http://a/x</url></file></metalink>", "an unknown entity &bomb;"),
        ("<metalink><file name=\"a\"></metalink>", "</metalink> closes <file>"),
        (
            """
            <metalink><file name=\"a\"><pieces type=\"sha-1\" \
            length=\"10\"><hash>zz</hash></pieces><url>http://a/x</url></file></metalink>
            """,
            "a: piece 0's sha-1 hash is not 40 hex digits"
        ),
        (
            """
            <metalink><file name=\"a\"><pieces type=\"sha-1\" \
            length=\"x\"><hash>zz</hash></pieces><url>http://a/x</url></file></metalink>
            """,
            "a: the pieces have no usable length ('x')"
        ),
        (
            """
            <metalink><file name=\"a\"><size>30</size><pieces type=\"md5\" \
            length=\"10\"><hash>\(String(repeating: "0", count: 32))</hash></pieces>
            """
                + "<url>http://a/x</url></file></metalink>", "a: 1 piece hashes of 10 bytes do not cover 30 bytes"
        ),
    ])
    func malformedDocumentsAreRefused(document: String, message: String) {
        #expect {
            try Metalink.parse(document)
        } throws: { error in
            guard let error = error as? HaulError else { return false }
            return error.code == .badRequest && error.message.contains(message)
        }
    }

    @Test func deepNestingIsRefused() {
        let document = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: HaulError.self) { try MiniXML.parse(document) }
    }
}
