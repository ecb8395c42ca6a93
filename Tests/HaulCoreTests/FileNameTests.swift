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

    @Test func longNamesKeepExtension() {
        let name = FileNameSanitizer.sanitize(String(repeating: "a", count: 400) + ".tar.gz")!
        #expect(name.utf8.count == 255)
        #expect(name.hasSuffix(".gz"))
    }

    @Test func contentDispositionForms() {
        #expect(ContentDisposition(parsing: "attachment; filename=\"a b.iso\"")?.fileName == "a b.iso")
        #expect(ContentDisposition(parsing: "attachment; filename=plain.bin")?.fileName == "plain.bin")
        #expect(ContentDisposition(parsing: "attachment; filename=\"x\\\"y.txt\"")?.fileName == "x\"y.txt")
        #expect(ContentDisposition(parsing: "attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt")?.fileName
                == "€ rates.txt")
        #expect(ContentDisposition(parsing: "inline")?.fileName == nil)
    }

    @Test func nameChoiceOrder() throws {
        let url = try RemoteURL("http://h/dir/file%20name.iso?x=1")
        #expect(FileNameSanitizer.chooseName(explicit: "mine.iso", contentDisposition: "attachment; filename=s.iso", url: url) == "mine.iso")
        #expect(FileNameSanitizer.chooseName(explicit: nil, contentDisposition: "attachment; filename=\"../../s.iso\"", url: url) == "s.iso")
        #expect(FileNameSanitizer.chooseName(explicit: nil, contentDisposition: "attachment; filename=\"\"", url: url) == "file name.iso")
        #expect(FileNameSanitizer.chooseName(explicit: nil, contentDisposition: nil, url: try RemoteURL("http://h/")) == "download")
        #expect(FileNameSanitizer.alternative("file.iso", attempt: 2) == "file.2.iso")
        #expect(FileNameSanitizer.alternative("README", attempt: 1) == "README.1")
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
