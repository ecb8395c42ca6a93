import HaulCore
import Testing

@Suite(.timeLimit(.minutes(2))) struct FileNameTests {
    @Test(arguments: [
        ("../../x", "x"),
        ("/etc/passwd", "passwd"),
        ("..\\..\\windows\\evil.exe", "evil.exe"),
        ("a\u{0}b\u{1B}[31mc\nd.txt", "ab[31mcd.txt"),
        (".bashrc", "bashrc"),
        ("report.pdf", "report.pdf"),
        ("  spaced.iso  ", "spaced.iso"),
        ("über файл.txt", "über файл.txt"),
    ])
    func hostileNamesStayInside(suggested: String, expected: String) {
        #expect(FileNameSanitizer.sanitize(suggested) == expected)
    }

    @Test(arguments: ["", "..", ".", "/", "../", "\u{1}\u{2}", " . "])
    func unusableNames(suggested: String) {
        #expect(FileNameSanitizer.sanitize(suggested) == nil)
    }

    /// A name whose short "extension" is hundreds of bytes (one letter and many combining marks
    /// is one Character) must not trap: the extension is dropped, the name still fits.
    @Test func anExtensionLongerThanTheLimitIsNotKept() throws {
        let mark = String(repeating: "\u{301}", count: 200)
        let hostile = String(repeating: "a", count: 300) + ".e" + mark
        let name = try #require(FileNameSanitizer.sanitize(hostile))
        #expect(name.utf8.count <= FileNameSanitizer.maxBytes)
        #expect(!name.isEmpty)
    }

    @Test func longNamesKeepExtension() {
        let name = FileNameSanitizer.sanitize(String(repeating: "a", count: 400) + ".tar.gz")!
        #expect(name.utf8.count == 250, "NAME.part fits 255 bytes")
        #expect(name.hasSuffix(".gz"))
    }

    /// Issue 19: a 5,004-character Content-Disposition name failed the download (NAME.part was
    /// longer than 255 bytes). Every source of a name gives one whose .part fits.
    @Test func everySourceOfANameLeavesRoomForPart() throws {
        let long = String(repeating: "n", count: 5_000) + ".iso"
        let url = try RemoteURL("http://h/" + long)
        let fromHeader = FileNameSanitizer.chooseName(
            explicit: nil, contentDisposition: "attachment; filename=\"\(long)\"", url: url)
        let fromURL = FileNameSanitizer.chooseName(explicit: nil, contentDisposition: nil, url: url)
        let multibyte = FileNameSanitizer.chooseName(
            explicit: nil, contentDisposition: nil,
            url: try RemoteURL("http://h/" + String(repeating: "%E2%82%AC", count: 200)))
        let alternative = FileNameSanitizer.alternative(fromURL, attempt: 12)
        for name in [fromHeader, fromURL, multibyte, alternative] {
            #expect((name + ".part").utf8.count <= 255, "\(name.utf8.count) bytes")
        }
        #expect(fromHeader.hasSuffix(".iso") && alternative.hasSuffix(".12.iso"))
        #expect(multibyte.utf8.count > 240, "cut at a character, not far short")
        let explicit = String(repeating: "o", count: 251)
        let error = #expect(throws: HaulError.self) {
            try DownloadRequest(url: url, destination: .file("/tmp/" + explicit))
        }
        #expect(error?.code == .usage)
        #expect(
            error?.message
                == """
                output file name is 251 bytes long; at most 250 are allowed, so that NAME.part fits the 255-byte \
                limit of file names
                """
        )
        #expect(
            try DownloadRequest(url: url, destination: .file("/tmp/" + String(repeating: "o", count: 250))).fileName?
                .utf8.count == 250)
    }

    @Test func contentDispositionForms() {
        #expect(ContentDisposition(parsing: "attachment; filename=\"a b.iso\"")?.fileName == "a b.iso")
        #expect(ContentDisposition(parsing: "attachment; filename=plain.bin")?.fileName == "plain.bin")
        #expect(ContentDisposition(parsing: "attachment; filename=\"x\\\"y.txt\"")?.fileName == "x\"y.txt")
        #expect(
            ContentDisposition(
                parsing: "attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt")?.fileName
                == "€ rates.txt")
        #expect(ContentDisposition(parsing: "inline")?.fileName == nil)
    }

    @Test func nameChoiceOrder() throws {
        let url = try RemoteURL("http://h/dir/file%20name.iso?x=1")
        #expect(
            FileNameSanitizer.chooseName(
                explicit: "mine.iso", contentDisposition: "attachment; filename=s.iso", url: url) == "mine.iso")
        #expect(
            FileNameSanitizer.chooseName(
                explicit: nil, contentDisposition: "attachment; filename=\"../../s.iso\"", url: url) == "s.iso")
        #expect(
            FileNameSanitizer.chooseName(explicit: nil, contentDisposition: "attachment; filename=\"\"", url: url)
                == "file name.iso")
        #expect(
            FileNameSanitizer.chooseName(explicit: nil, contentDisposition: nil, url: try RemoteURL("http://h/"))
                == "download")
        #expect(FileNameSanitizer.alternative("file.iso", attempt: 2) == "file.2.iso")
        #expect(FileNameSanitizer.alternative("README", attempt: 1) == "README.1")
    }

    /// A user's own name (`-o`, an API's `fileName`) is taken as typed, as curl and wget take
    /// it: a dot file, spaces and dots at either end. Only a name that is no file (`.`, `..`, a
    /// trailing `/`, a NUL) or too long for `NAME.part` is refused.
    @Test func aUsersOwnNameIsTakenAsTyped() throws {
        let url = try RemoteURL("http://h/x")
        for name in [".env", ".bashrc", " spaced. ", "..hidden", "a\tb", "-"] {
            #expect(try DownloadRequest(url: url, destination: .file("/tmp/dir/" + name)).fileName == name, "\(name)")
        }
        for path in ["/tmp/dir/.", "/tmp/dir/..", "/tmp/dir/", "/tmp/dir/a\u{0}b"] {
            let error = #expect(throws: HaulError.self, "\(path)") {
                try DownloadRequest(url: url, destination: .file(path))
            }
            #expect(error?.code == .usage)
        }
    }

    @Test func outputPathMustNameAFile() throws {
        let url = try RemoteURL("http://h/x")
        let request = try DownloadRequest(url: url, destination: .file("/tmp/dir/out.bin"))
        #expect(request.directory == "/tmp/dir")
        #expect(request.fileName == "out.bin")
        #expect(throws: HaulError.self) { try DownloadRequest(url: url, destination: .file("/tmp/dir/")) }
        #expect(throws: HaulError.self) { try DownloadRequest(url: url, destination: .file("/tmp/..")) }
    }
}
