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
        for bad in [
            #"{"sha": "short"}"#, #"{"sha": "\#(Self.commit)", "siblings": [{"rfilename": "../x"}]}"#,
            #"{"sha": "\#(Self.commit)", "siblings": [{"rfilename": "/abs"}]}"#,
            #"{"sha": "\#(Self.commit)", "siblings": [{"rfilename": "a", "lfs": {"sha256": "zz"}}]}"#, "[",
        ] {
            #expect(throws: HaulError.self, "\(bad)") { try HubAPI.revision(Array(bad.utf8)) }
        }
    }

    @Test func whatAPathAndTheGlobsSelect() {
        let files = ["config.json", "model-1.safetensors", "model-2.safetensors", "sub/dir/notes.txt", "sub/x.bin"].map
        {
            HubAPI.File(path: $0, size: 1, lfsSHA256: nil, blobID: nil)
        }
        func chosen(_ path: String?, _ include: [String] = [], _ exclude: [String] = []) -> [String] {
            HubAPI.select(files, under: path, include: include, exclude: exclude).map(\.local)
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
