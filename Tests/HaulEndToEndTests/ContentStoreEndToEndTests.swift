import Foundation
import HaulCore
import HaulTesting
import Testing

/// A digest is an identity (issue 34), through the real binary: two URLs of one SHA-256 in one
/// command fetch it once (the queue holds the twin, which then copies the file: never a hard
/// link between two of the user's files); `--content-store` keeps a completed file read-only
/// by digest and serves the next download of that digest without a request; a store file edited
/// through a hard link is found out, dropped and fetched again; across file systems the store
/// copies.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ContentStoreEndToEndTests {
    let payload = Payload(seed: 3434, length: 2_500_000)

    var checksum: String { "sha-256=\(payload.sha256)" }

    func inode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
    }

    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    func gets(_ world: World, _ path: String) -> Int {
        world.server.requests(to: path).count
    }

    /// A Metalink names two files with one SHA-256 at two URLs.
    @Test func twoFilesOfOneDigestFetchItOnce() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: payload))
        world.server.setRoute("/b.bin", Route(payload: payload))
        let files = ["a.bin", "b.bin"].map { name in
            """
            <file name="\(name)"><size>\(payload.length)</size><hash type="sha-256">\(payload.sha256)</hash>
            <url>\(world.server.url("/" + name))</url></file>
            """
        }
        let metalink = world.home + "-twins.meta4"
        try
            ("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">\(files.joined())</metalink>
        """).write(toFile: metalink, atomically: true, encoding: .utf8)
        let result = try await HaulProcess.run(["get", "--metalink", metalink, "-j", "2"], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(world.sha256(of: world.directory + "/a.bin") == payload.sha256)
        #expect(world.sha256(of: world.directory + "/b.bin") == payload.sha256)
        let fetched = [gets(world, "/a.bin"), gets(world, "/b.bin")]
        #expect(fetched.filter { $0 == 0 }.count == 1, "one of the two was never asked for: \(fetched)")
        #expect(
            try inode(world.directory + "/a.bin") != inode(world.directory + "/b.bin"),
            "two files of the user are never one inode")
        try await world.close()
    }

    @Test func theStoreServesTheNextDownloadAndDropsAnEditedFile() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: payload))
        let store = world.home + "-store"
        let kept = store + "/sha-256/" + payload.sha256
        let first = try await HaulProcess.run(
            ["get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", store, "-o", "one.bin"],
            in: world)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(world.sha256(of: kept) == payload.sha256)
        #expect(try mode(kept) == 0o444, "the store's files are read-only")
        #expect(try inode(kept) == inode(world.directory + "/one.bin"), "one file system: a hard link")
        let asked = gets(world, "/a.bin")

        let second = try await HaulProcess.run(
            ["get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", store, "-o", "two.bin"],
            in: world)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(world.sha256(of: world.directory + "/two.bin") == payload.sha256)
        #expect(gets(world, "/a.bin") == asked, "taken from the store, not fetched")

        // An edit in place of a destination is an edit of the store's file (one inode).
        let one = world.directory + "/one.bin"
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: one)
        let handle = try #require(FileHandle(forUpdatingAtPath: one))
        try handle.seek(toOffset: 1000)
        handle.write(Data("edited".utf8))
        try handle.close()
        #expect(world.sha256(of: kept) != payload.sha256)

        let third = try await HaulProcess.run(
            ["get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", store, "-o", "three.bin"],
            in: world)
        #expect(third.status == 0, "\(third.stderr)")
        #expect(world.sha256(of: world.directory + "/three.bin") == payload.sha256, "never the edited bytes")
        #expect(gets(world, "/a.bin") > asked, "the edited file was not used: fetched")
        #expect(world.sha256(of: kept) == payload.sha256, "the store has the right file again")
        try? FileManager.default.removeItem(atPath: store)
        try await world.close()
    }

    /// On a file system with reflinks (XFS, mounted from an image by the test; `.ci/run`
    /// installs xfsprogs), the store's file and the destination share their blocks but not their
    /// inode: the destination keeps the user's mode, and an edit of it changes only it.
    @Test(.enabled(if: XFSImage.available, "needs root and mkfs.xfs (.ci/run installs xfsprogs)"))
    func aStoreWithReflinksSharesBlocksNotTheInode() async throws {
        let world = try await World.make()
        let xfs = try XFSImage.mount()
        defer { xfs.unmount() }
        world.server.setRoute("/a.bin", Route(payload: payload))
        let store = xfs.directory + "/store"
        var asked: [Int] = []
        for name in ["one.bin", "two.bin"] {
            let result = try await HaulProcess.run(
                [
                    "get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", store, "-o",
                    xfs.directory + "/" + name,
                ], in: world)
            #expect(result.status == 0, "\(result.stderr)")
            asked.append(gets(world, "/a.bin"))
        }
        #expect(asked[0] > 0 && asked[1] == asked[0], "the second came from the store: \(asked)")
        let two = xfs.directory + "/two.bin"
        let kept = store + "/sha-256/" + payload.sha256
        #expect(world.sha256(of: two) == payload.sha256)
        #expect(try inode(kept) != inode(two))
        #expect(try mode(two) & 0o200 != 0, "a reflink keeps the user's own mode")
        let extents = try Tools.run("filefrag", ["-v", two])
        #expect(extents.output.contains("shared"), "blocks shared with the store: \(extents.output)")
        let handle = try #require(FileHandle(forUpdatingAtPath: two))
        try handle.seek(toOffset: 100)
        handle.write(Data("edited".utf8))
        try handle.close()
        #expect(world.sha256(of: kept) == payload.sha256, "copy-on-write: the store's file is untouched")
        try await world.close()
    }

    /// A store that cannot be made or written is one line at the start, and nothing is fetched.
    @Test func aStoreThatCannotBeWrittenIsRefusedAtTheStart() async throws {
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: payload))
        let file = world.home + "-not-a-directory"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", file], in: world)
        #expect(result.status == ExitCodesExpected.fileSystem, "\(result.stderr)")
        #expect(result.stderr == "haul: the content store \(file) is not a directory\n", "\(result.stderr)")
        #expect(gets(world, "/a.bin") == 0 && world.files().isEmpty)
        try? FileManager.default.removeItem(atPath: file)
        try await world.close()
    }

    /// A store on another file system (tmpfs) is copied from: the destination is a file of its
    /// own.
    @Test func aStoreOnAnotherFileSystemIsCopied() async throws {
        let shm = "/dev/shm"
        try #require(FileManager.default.fileExists(atPath: shm), "no tmpfs at /dev/shm")
        let world = try await World.make()
        world.server.setRoute("/a.bin", Route(payload: payload))
        let store = shm + "/haul-store-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: store) }
        for name in ["one.bin", "two.bin"] {
            let result = try await HaulProcess.run(
                ["get", world.server.url("/a.bin"), "--checksum", checksum, "--content-store", store, "-o", name],
                in: world)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(world.sha256(of: world.directory + "/" + name) == payload.sha256)
        }
        #expect(gets(world, "/a.bin") >= 1)
        let kept = store + "/sha-256/" + payload.sha256
        #expect(try inode(kept) != inode(world.directory + "/two.bin"))
        #expect(try mode(world.directory + "/two.bin") & 0o200 != 0, "a copy keeps the user's own mode")
        try await world.close()
    }
}

/// A small XFS file system in an image, mounted through a loop device: reflinks where the
/// machine's own file system (ext4) has none.
struct XFSImage {
    let image: String
    let directory: String

    static var available: Bool {
        getuid() == 0 && Tools.path("mkfs.xfs") != nil && Tools.path("mount") != nil && Tools.path("filefrag") != nil
    }

    static func mount() throws -> XFSImage {
        let root = NSTemporaryDirectory() + "haul-xfs-\(UUID().uuidString)"
        let image = XFSImage(image: root + ".img", directory: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: image.image, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: image.image))
        try handle.truncate(atOffset: 400 << 20)
        try handle.close()
        let made = try Tools.run("mkfs.xfs", ["-q", "-f", image.image])
        try #require(made.status == 0, "mkfs.xfs: \(made.output)")
        let mounted = try Tools.run("mount", ["-o", "loop", image.image, root])
        try #require(mounted.status == 0, "mount: \(mounted.output)")
        return image
    }

    func unmount() {
        let result = try? Tools.run("umount", [directory]) // reported below
        #expect(result?.status == 0, "umount \(directory): \(result?.output ?? "not run")")
        try? FileManager.default.removeItem(atPath: image)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
