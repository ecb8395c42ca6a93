import Foundation
import HaulAPI
import HaulCore
import Testing

@testable import HaulServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// aria2's `load-cookies` as the daemon reads it, with real files: only a regular file beneath a
/// download directory, never through a link, bounded, parsed by the cookie jar; accepted with an
/// add, refused as a change. Every refusal is one clear line that names the option and quotes
/// no cookie.
@Suite(.timeLimit(.minutes(1))) struct CookieFileTests {
    let root: String
    let outside: String
    let policy: DirectoryPolicy
    let line = "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\thunter2\n"

    init() throws {
        let base = NSTemporaryDirectory() + "haul-cookie-files-\(UUID().uuidString)"
        root = base + "/downloads"
        outside = base + "/elsewhere"
        for path in [root, outside] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        policy = DirectoryPolicy(roots: [root])
    }

    func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    enum Loaded {
        case jar(CookieJar?)
        case refused(String)
    }

    /// The jar of `path`, or the refusal's message.
    func load(_ path: JSONValue) async -> Loaded {
        do {
            return .jar(try await Aria2Cookies.jar(["load-cookies": path], policy: policy, now: 0))
        } catch {
            return .refused(Aria2Error(error).message)
        }
    }

    func refusal(_ path: String) async -> String {
        switch await load(.string(path)) {
        case .jar: return "accepted"
        case .refused(let message): return message
        }
    }

    @Test func aFileBeneathADownloadDirectoryIsRead() async throws {
        try write("# Netscape HTTP Cookie File\n" + line, to: root + "/cookies.txt")
        guard case .jar(let jar) = await load(.string(root + "/cookies.txt")) else {
            Issue.record("refused: \(await refusal(root + "/cookies.txt"))")
            return
        }
        #expect(jar?.cookies.map(\.name) == ["sid"])
        #expect(try await Aria2Cookies.jar([:], policy: policy, now: 0) == nil, "not given: no jar")
    }

    @Test func pathsOutsideOrThroughALinkAreRefused() async throws {
        try write(line, to: outside + "/cookies.txt")
        let away = await refusal(outside + "/cookies.txt")
        #expect(
            away.hasPrefix(
                "load-cookies: \(outside)/cookies.txt is outside the daemon's download directories (\(root))"),
            "\(away)")
        #expect(await refusal(root + "/../elsewhere/cookies.txt").contains("is outside"), "'..' climbs out")
        #expect(await refusal("cookies.txt") == "load-cookies must be an absolute path: cookies.txt")

        // A link inside the directory to the file outside: its real path is outside.
        try FileManager.default.createSymbolicLink(
            atPath: root + "/away.txt", withDestinationPath: outside + "/cookies.txt")
        #expect(await refusal(root + "/away.txt").contains("is outside"))
        // A link to a file inside, and a directory that is a link: no link is followed at all.
        try write(line, to: root + "/real.txt")
        try FileManager.default.createSymbolicLink(atPath: root + "/link.txt", withDestinationPath: root + "/real.txt")
        #expect(
            await refusal(root + "/link.txt")
                == """
                load-cookies: \(root)/link.txt is a symbolic link: haul follows no link beneath its download \
                directories
                """
        )
        try FileManager.default.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
        try write(line, to: root + "/real/c.txt")
        try FileManager.default.createSymbolicLink(atPath: root + "/sub", withDestinationPath: root + "/real")
        #expect(await refusal(root + "/sub/c.txt").contains("\(root)/sub is a symbolic link"))
    }

    @Test func missingSpecialLargeAndMalformedFilesAreRefused() async throws {
        #expect(
            await refusal(root + "/none.txt") == "load-cookies: cannot open \(root)/none.txt: No such file or directory"
        )
        #expect(mkfifo(root + "/fifo", 0o600) == 0)
        #expect(
            await refusal(root + "/fifo") == "load-cookies: \(root)/fifo is not a regular file",
            "a FIFO would block the reader")
        try FileManager.default.createDirectory(atPath: root + "/folder", withIntermediateDirectories: true)
        #expect(await refusal(root + "/folder") == "load-cookies: \(root)/folder is not a regular file")
        try write(String(repeating: "#", count: Aria2Cookies.maxBytes + 1), to: root + "/big.txt")
        #expect(
            await refusal(root + "/big.txt")
                == "load-cookies: \(root)/big.txt is larger than \(Aria2Cookies.maxBytes) bytes")
        try write("# ok\n127.0.0.1\tFALSE\t/\tFALSE\tsoon\tsid\thunter2\n", to: root + "/bad.txt")
        let malformed = await refusal(root + "/bad.txt")
        #expect(
            malformed.hasPrefix("load-cookies: \(root)/bad.txt, line 2: the expiry is not a number of seconds"),
            "\(malformed)")
        #expect(!malformed.contains("hunter2"))
        // A value of another type is refused, not ignored: the client asked for cookies.
        guard case .refused(let typed) = await load(.number(1)) else {
            Issue.record("a number was accepted")
            return
        }
        #expect(typed == "We encountered a problem while processing the option '--load-cookies'.")
    }

    @Test func acceptedWithAnAddRefusedAsAChange() throws {
        let defaults = DaemonDefaults(directory: root, connections: 1)
        let options: [String: JSONValue] = ["load-cookies": .string(root + "/cookies.txt")]
        #expect(
            try Aria2Options.addRequest(uri: "http://x/f", options: options, defaults: defaults).url == "http://x/f")
        let attempts: [() throws -> Void] = [
            { _ = try Aria2Options.globalChange(options) },
            { _ = try Aria2Options.downloadChange(options) },
        ]
        for attempt in attempts {
            #expect {
                try attempt()
            } throws: { error in
                let message = (error as? Aria2Error)?.message ?? ""
                return message.hasPrefix("The option '--load-cookies' is read once, when a download is added")
            }
        }
        // Still refused with an add: options that write files.
        #expect(throws: Aria2Error.self) {
            try Aria2Options.addRequest(
                uri: "http://x/f", options: ["save-cookies": .string(root + "/c")], defaults: defaults)
        }
    }
}
