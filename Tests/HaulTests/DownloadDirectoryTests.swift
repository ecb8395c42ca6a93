import Foundation
import HaulCore
import Testing

@testable import Haul

/// A download's directory resolved beneath its root with no link followed (issue 19): every way
/// a link, a hard link or a special file planted in or above a download could lead a write out.
@Suite(.timeLimit(.minutes(1))) struct DownloadDirectoryTests {
    /// `root/dl` (the allowed root) and `root/outside` with a `victim.txt` nobody may touch.
    struct Tree {
        let root: String
        var allowed: String { root + "/dl" }
        var outside: String { root + "/outside" }
        var victim: String { outside + "/victim.txt" }

        init() throws {
            root = NSTemporaryDirectory() + "haul-confined-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: root + "/dl", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/outside", withIntermediateDirectories: true)
            try Data("precious".utf8).write(to: URL(fileURLWithPath: root + "/outside/victim.txt"))
        }

        func link(_ path: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        }

        var victimIntact: Bool { (try? String(contentsOfFile: victim, encoding: .utf8)) == "precious" }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    private func forbidden(_ error: any Error) -> Bool { (error as? HaulError)?.code == .forbidden }

    @Test func missingDirectoriesAreCreatedBeneathTheRoot() throws {
        let tree = try Tree()
        defer { tree.remove() }
        #expect(try DownloadDirectory.resolve(tree.allowed + "/a/b", roots: [tree.allowed], create: false) == nil)
        let directory = try #require(
            try DownloadDirectory.resolve(tree.allowed + "/a/b", roots: [tree.allowed], create: true))
        #expect(directory.path == tree.allowed + "/a/b")
        var isDirectory: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: tree.allowed + "/a/b", isDirectory: &isDirectory)
                && isDirectory.boolValue)
    }

    @Test func aLinkWhereADirectoryWasIsRefused() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.link(tree.allowed + "/later", to: "../outside")
        #expect {
            try DownloadDirectory.resolve(tree.allowed + "/later", roots: [tree.allowed], create: true)
        } throws: { forbidden($0) }
        // Deeper too: a link in the middle of the path.
        #expect {
            try DownloadDirectory.resolve(tree.allowed + "/later/x", roots: [tree.allowed], create: true)
        } throws: { forbidden($0) }
        #expect(!FileManager.default.fileExists(atPath: tree.outside + "/x"), "nothing was created outside")
    }

    @Test func aDirectoryOutsideTheRootsOrClimbingOutIsRefused() throws {
        let tree = try Tree()
        defer { tree.remove() }
        #expect { try DownloadDirectory.resolve(tree.outside, roots: [tree.allowed], create: true) } throws: {
            forbidden($0)
        }
        #expect {
            try DownloadDirectory.resolve(tree.allowed + "/../outside", roots: [tree.allowed], create: true)
        } throws: { forbidden($0) }
        // A root that is a prefix of another name is not its parent.
        #expect { try DownloadDirectory.resolve(tree.allowed + "x", roots: [tree.allowed], create: true) } throws: {
            forbidden($0)
        }
    }

    @Test func theRootItselfMayBeALinkItsOperatorChose() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.link(tree.root + "/alias", to: "dl")
        let directory = try #require(
            try DownloadDirectory.resolve(tree.root + "/alias/sub", roots: [tree.root + "/alias"], create: true))
        let file = try directory.openFile("f", flags: O_RDWR | O_CREAT)
        close(file)
        #expect(FileManager.default.fileExists(atPath: tree.allowed + "/sub/f"))
    }

    @Test func aPlantedPartLinkIsNeverOpened() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.link(tree.allowed + "/name.bin.part", to: "../outside/victim.txt")
        let directory = try #require(try DownloadDirectory.resolve(tree.allowed, roots: nil, create: true))
        #expect(directory.size(of: "name.bin.part") == nil, "a link is not a .part with bytes")
        for exclusive in [false, true] {
            #expect { try directory.openFile("name.bin.part", flags: O_RDWR | O_CREAT, exclusive: exclusive) } throws: {
                forbidden($0)
            }
        }
        #expect(tree.victimIntact)
    }

    @Test func aPartWithAnotherHardLinkOrThatIsNoFileIsRefused() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try FileManager.default.linkItem(atPath: tree.victim, toPath: tree.allowed + "/hard.part")
        #expect(mkfifo(tree.allowed + "/fifo.part", 0o644) == 0)
        let directory = try #require(try DownloadDirectory.resolve(tree.allowed, roots: [tree.allowed], create: true))
        #expect { try directory.openFile("hard.part", flags: O_RDWR | O_CREAT) } throws: { forbidden($0) }
        #expect { try directory.openFile("fifo.part", flags: O_RDWR | O_CREAT) } throws: { forbidden($0) }
        #expect(tree.victimIntact)
    }

    @Test func anExclusiveOpenOfATakenNameFails() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: tree.allowed + "/f.part"))
        let directory = try #require(try DownloadDirectory.resolve(tree.allowed, roots: nil, create: true))
        #expect { try directory.openFile("f.part", flags: O_RDWR | O_CREAT, exclusive: true) } throws: {
            ($0 as? HaulError)?.code == .fileExists
        }
        #expect(try String(contentsOfFile: tree.allowed + "/f.part", encoding: .utf8) == "theirs")
    }

    @Test func publishingRefusesAPartSwappedForALinkAndNeverReplacesAFinalName() throws {
        let tree = try Tree()
        defer { tree.remove() }
        let directory = try #require(try DownloadDirectory.resolve(tree.allowed, roots: [tree.allowed], create: true))
        // The .part was swapped for a link to a file outside before publishing.
        try tree.link(tree.allowed + "/a.part", to: "../outside/victim.txt")
        #expect { try directory.link(part: "a.part", final: "a") } throws: { forbidden($0) }
        #expect(directory.status(of: "a") == nil, "no final name links out")
        // A final name planted as a link is never replaced or followed.
        try Data("mine".utf8).write(to: URL(fileURLWithPath: tree.allowed + "/b.part"))
        try tree.link(tree.allowed + "/b", to: "../outside/victim.txt")
        #expect { try directory.link(part: "b.part", final: "b") } throws: { ($0 as? HaulError)?.code == .fileExists }
        #expect(tree.victimIntact)
        // The ordinary case: the .part takes its name and leaves.
        try Data("ok".utf8).write(to: URL(fileURLWithPath: tree.allowed + "/c.part"))
        try directory.link(part: "c.part", final: "c")
        #expect(try String(contentsOfFile: tree.allowed + "/c", encoding: .utf8) == "ok")
        #expect(directory.status(of: "c.part") == nil)
    }

    @Test func removingThroughADirectorySwappedForALinkDeletesNothingOutside() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try Data("x".utf8).write(to: URL(fileURLWithPath: tree.outside + "/victim.txt.part"))
        try tree.link(tree.allowed + "/sub", to: "../outside")
        var request = try DownloadRequest(
            url: RemoteURL("http://h/victim.txt"), destination: .directory(tree.allowed + "/sub"))
        request.directory = tree.allowed + "/sub"
        var record = DownloadRecord(id: .random(), request: request, createdAt: 0)
        record.fileName = "victim.txt"
        #expect { try DestinationFiles.remove(record, final: true, roots: [tree.allowed]) } throws: { forbidden($0) }
        #expect(tree.victimIntact)
        #expect(FileManager.default.fileExists(atPath: tree.outside + "/victim.txt.part"))
    }
}
