import Foundation
import HaulCore
import Testing

@testable import Haul

/// The one `mkdir -p`: parents made, a private directory 0700 whatever the umask, an existing
/// one left as it is, a file in the way a clear error.
@Suite(.timeLimit(.minutes(1))) struct DirectoriesTests {
    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func makesParentsAndAPrivateDirectoryIsOnlyTheOwners() throws {
        let base = NSTemporaryDirectory() + "haul-dirs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        try Directories.create(base + "/a/b/state", what: "state directory", isPrivate: true)
        #expect(try mode(base + "/a/b/state") == 0o700)
        #expect(try mode(base + "/a") & 0o700 == 0o700, "parents are made, usable by their owner")
        // Again: nothing to do, and an existing directory keeps its own mode.
        try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: base + "/a/b/state")
        try Directories.create(base + "/a/b/state", isPrivate: true)
        #expect(try mode(base + "/a/b/state") == 0o750)
    }

    @Test func aFileInTheWayIsAFileSystemErrorNamingIt() throws {
        let base = NSTemporaryDirectory() + "haul-dirs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        try Directories.create(base)
        #expect(FileManager.default.createFile(atPath: base + "/blocker", contents: Data("keep".utf8)))
        let error = #expect(throws: HaulError.self) {
            try Directories.create(base + "/blocker/sub", what: "download directory")
        }
        #expect(error?.code == .fileSystem)
        #expect(
            error?.message
                == """
                cannot create the download directory \(base)/blocker/sub: the download directory \(base)/blocker \
                is not a directory
                """
        )
        #expect(try String(contentsOfFile: base + "/blocker", encoding: .utf8) == "keep")
    }
}
