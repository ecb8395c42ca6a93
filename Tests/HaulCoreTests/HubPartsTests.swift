import HaulCore
import Testing

/// The pure parts of `hf://`: the Hub's API paths and answer, which files a path and globs
/// select (as `fnmatch` and `huggingface-cli download` read patterns), and huggingface_hub's
/// cache layout.
@Suite(.timeLimit(.minutes(1))) struct HubPartsTests {
    static let commit = String(repeating: "ab", count: 20)

    @Test func pathsOfTheAPIAndOfAFile() throws {
        let model = try HubName(parsing: "org/repo@refs%2Fpr%2F1")
        #expect(HubAPI.revisionPath(model) == "/api/models/org/repo/revision/refs%2Fpr%2F1?blobs=true")
        #expect(
            HubAPI.resolvePath(model, commit: Self.commit, file: "sub dir/a+b.json")
                == "/org/repo/resolve/\(Self.commit)/sub%20dir/a%2Bb.json")
        let dataset = try HubName(parsing: "datasets/org/data")
        #expect(HubAPI.revisionPath(dataset) == "/api/datasets/org/data/revision/main?blobs=true")
        #expect(
            HubAPI.resolvePath(dataset, commit: Self.commit, file: "x.csv")
                == "/datasets/org/data/resolve/\(Self.commit)/x.csv")
    }

    @Test func theRevisionsAnswer() throws {
        let revision = try HubAPI.revision(
            Array(
                """
                {"id": "org/repo", "sha": "\(Self.commit)", "siblings": [
                  {"rfilename": "config.json", "size": 36, "blobId": "\(String(repeating: "1", count: 40))"},
                  {"rfilename": "model.safetensors", "size": 134, "blobId": "\(String(repeating: "2", count: 40))",
                   "lfs": {"sha256": "\(String(repeating: "C", count: 64))", "size": 6291456, "pointerSize": 134}}]}
                """.utf8))
        #expect(revision.commit == Self.commit)
        #expect(revision.files[0].etag == String(repeating: "1", count: 40), "a small file's ETag is its blob id")
        #expect(revision.files[1].size == 6_291_456, "an LFS file's size is its content's, not its pointer's")
        #expect(revision.files[1].etag == String(repeating: "c", count: 64), "an LFS file's ETag is its sha256")
        #expect(!revision.gated, "no `gated`: open")
        for bad in [
            #"{"sha": "short"}"#, #"{"sha": "\#(Self.commit)", "siblings": [{"size": 1}]}"#,
            #"{"sha": "\#(Self.commit)", "siblings": [{"rfilename": "a", "lfs": {"sha256": "zz"}}]}"#, "[",
        ] {
            #expect(throws: HaulError.self, "\(bad)") { try HubAPI.revision(Array(bad.utf8)) }
        }
        for (gated, expected) in [(#""manual""#, true), (#""auto""#, true), ("false", false), ("true", true)] {
            let answer = #"{"sha": "\#(Self.commit)", "gated": \#(gated), "siblings": []}"#
            #expect(try HubAPI.revision(Array(answer.utf8)).gated == expected, "\(gated)")
        }
    }

    /// A listed path is a path beneath the directory, each segment as given: dot files and dot
    /// folders are kept; a path no file can have (`..`, `.`, an empty segment, a control
    /// character, a segment over 250 bytes, absolute) is skipped and named, the rest selected.
    @Test func dotFilesAreKeptAndPathsNoFileCanHaveAreSkipped() {
        let kept = [".gitattributes", ".github/workflows/x.yml", ".ipynb_checkpoints/a.txt", "..hidden", "a/.b/c"]
        let bad: [(String, String)] = [
            ("../x", "a '..' segment"), ("a/./b", "a '.' segment"), ("a//b", "an empty segment"),
            ("/abs", "an absolute path"), ("bad\u{1}name", "a NUL or control character"),
            ("esc\u{1B}[31m", "a NUL or control character"),
            (String(repeating: "x", count: 251) + "/y", "a segment of 251 bytes (at most 250)"),
        ]
        let files = (kept + bad.map(\.0)).map { HubAPI.File(path: $0, size: 1, lfsSHA256: nil, blobID: nil) }
        let chosen = HubAPI.select(files, under: nil, include: [], exclude: [])
        #expect(chosen.files.map(\.local) == kept)
        #expect(chosen.skipped.map(\.path) == bad.map(\.0))
        #expect(chosen.skipped.map(\.problem) == bad.map(\.1))
        #expect(
            chosen.skipped[4].message
                == "skipped the file 'bad\\x01name': it names no file beneath the directory (a NUL or control character)",
            "a control character is shown, never sent to the terminal")
        let under = HubAPI.select(files, under: "a", include: [], exclude: [])
        #expect(under.files.map(\.local) == [".b/c"] && under.skipped.map(\.path) == ["a/./b", "a//b"])
    }

    /// A gated repository: refused without a token before any file is asked, probed with one;
    /// the Hub's `GatedRepo` (401 or 403) is the same one line, naming no file's address; its
    /// `RepoNotFound` (401 without a token) is no such repository.
    @Test func aGatedRepositorysAccess() throws {
        let model = try HubName(parsing: "org/gated")
        let line = "hf://org/gated is gated: accept its terms on the Hub and set HF_TOKEN (or --hf-token-file)"
        #expect(HubAccess.step(gated: false, hasToken: false, name: model) == .fetch)
        #expect(HubAccess.step(gated: true, hasToken: true, name: model) == .probe)
        guard case .refuse(let error) = HubAccess.step(gated: true, hasToken: false, name: model) else {
            Issue.record("a gated repository without a token is refused")
            return
        }
        #expect(error.message == line && error.code == .httpStatus)
        for status in [401, 403] {
            let refusal = HubAccess.refusal(
                status: status, errorCode: "GatedRepo", name: model, shown: "hf://org/gated/sub",
                hasToken: status == 403)
            #expect(refusal.message == line && refusal.httpStatus == status)
        }
        let dataset = try HubName(parsing: "datasets/org/data")
        #expect(HubAccess.gatedRefusal(dataset, status: 401).message.hasPrefix("hf://datasets/org/data is gated"))
        #expect(
            HubAccess.refusal(
                status: 401, errorCode: "RepoNotFound", name: model, shown: "hf://org/gated", hasToken: false
            )
            .message == "hf://org/gated: no such model org/gated (or it is private: set HF_TOKEN)")
        #expect(
            HubAccess.refusal(
                status: 404, errorCode: "RepoNotFound", name: model, shown: "hf://org/gated", hasToken: true
            )
            .message == "hf://org/gated: no such model org/gated")
    }

    @Test func whatAPathAndTheGlobsSelect() {
        let files = ["config.json", "model-1.safetensors", "model-2.safetensors", "sub/dir/notes.txt", "sub/x.bin"].map
        {
            HubAPI.File(path: $0, size: 1, lfsSHA256: nil, blobID: nil)
        }
        func chosen(_ path: String?, _ include: [String] = [], _ exclude: [String] = []) -> [String] {
            HubAPI.select(files, under: path, include: include, exclude: exclude).files.map(\.local)
        }
        #expect(chosen(nil).count == 5)
        #expect(chosen("sub") == ["dir/notes.txt", "x.bin"], "a folder's files, relative to it")
        #expect(chosen("sub/dir/notes.txt") == ["notes.txt"], "a file by name")
        #expect(chosen("su") == [], "a prefix is no folder")
        #expect(chosen(nil, ["*.safetensors"]) == ["model-1.safetensors", "model-2.safetensors"])
        #expect(chosen(nil, ["*.txt"]) == ["sub/dir/notes.txt"], "* crosses /, as fnmatch")
        #expect(chosen(nil, ["sub/"]) == ["sub/dir/notes.txt", "sub/x.bin"], "a folder pattern takes its files")
        #expect(chosen(nil, [], ["*.safetensors", "sub/*"]) == ["config.json"])
        #expect(chosen(nil, ["model-[12].*"], ["*-2.*"]) == ["model-1.safetensors"])
    }

    @Test func fnmatchsPatterns() {
        #expect(Glob.matches("*.json", "config.json"))
        #expect(Glob.matches("model-?.bin", "model-1.bin") && !Glob.matches("model-?.bin", "model-10.bin"))
        #expect(Glob.matches("[!a]*", "bcd") && !Glob.matches("[!a]*", "abc"))
        #expect(Glob.matches("[a-c]x", "bx") && !Glob.matches("[a-c]x", "dx"))
        #expect(Glob.matches("*", "") && !Glob.matches("?", ""))
        #expect(Glob.matches("a*b*c", "a/x/b/y/c") && !Glob.matches("a*b*c", "a/x/b/y/d"))
        #expect(Glob.matches("[", "[") && !Glob.matches("[", "a"), "an unclosed [ is itself")
    }

    @Test func huggingFaceHubsCacheLayout() throws {
        let model = try HubName(parsing: "org/repo")
        #expect(HubCache.folder(model) == "models--org--repo")
        #expect(HubCache.blob(model, etag: "e1") == "models--org--repo/blobs/e1")
        let top = HubCache.snapshot(model, commit: Self.commit, path: "config.json", etag: "e1")
        #expect(top.link == "models--org--repo/snapshots/\(Self.commit)/config.json")
        #expect(top.target == "../../blobs/e1")
        #expect(
            HubCache.snapshot(model, commit: Self.commit, path: "a/b/c.txt", etag: "e2").target
                == "../../../../blobs/e2")
        #expect(HubCache.ref(model, revision: "main") == "models--org--repo/refs/main")
        #expect(HubCache.folder(try HubName(parsing: "datasets/org/data")) == "datasets--org--data")
    }
}
