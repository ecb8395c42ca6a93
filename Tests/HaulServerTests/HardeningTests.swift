import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulStore
import Hummingbird
import Logging
import Testing

@testable import HaulServer

/// The daemon's checks against hostile input (issue 19), without a socket: which `Host` and
/// `Origin` values name the daemon, how long a URL may be, which aria2 options are refused.
@Suite(.timeLimit(.minutes(1))) struct HardeningTests {
    @Test(arguments: [
        ("127.0.0.1:6800", true), ("localhost", true), ("LocalHost:80", true), ("localhost.:6800", true),
        ("[::1]:6800", true),
        ("127.0.0.2", true), ("nas.example:6800", true),
        ("evil.example", false), ("evil.example:6800", false), ("127.0.0.1.evil.example", false),
        ("localhost.evil.example", false),
        ("192.168.1.5:6800", false), ("user@127.0.0.1", false), ("", false), ("[::1", false), ("[::2]:6800", false),
    ])
    func aDaemonOnLoopbackAcceptsLoopbackItsHostAndAllowedNames(authority: String, allowed: Bool) {
        #expect(HostCheck(host: "127.0.0.1", allowedNames: ["nas.example"]).allows(authority: authority) == allowed)
    }

    @Test func aDaemonOnEveryAddressAlsoAcceptsAddressLiteralsButNotNames() {
        let check = HostCheck(host: "0.0.0.0")
        #expect(check.allows(authority: "192.168.1.5:6800"))
        #expect(check.allows(authority: "[fe80::1]:6800"))
        #expect(!check.allows(authority: "evil.example:6800"))
        #expect(HostCheck(host: "nas.example").allows(authority: "NAS.example:6800"))
    }

    @Test(
        arguments: [
            (nil, true), ("http://127.0.0.1:6800", true), ("http://localhost:6800", true),
            ("http://evil.example:6800", false),
            ("http://127.0.0.1:6801", false), ("http://127.0.0.1", false), ("null", false), ("file://", false),
        ] as [(String?, Bool)])
    func aWebSocketOriginMustBeTheDaemonsOwn(origin: String?, allowed: Bool) {
        #expect(HostCheck(host: "127.0.0.1").allows(origin: origin, authority: "127.0.0.1:6800") == allowed)
    }

    @Test func aURLLongerThan8KiBIsRefusedWithoutEchoingIt() throws {
        let defaults = DaemonDefaults(directory: "/srv/downloads", connections: 1)
        let long = "http://example.com/" + String(repeating: "a", count: 1_000_000)
        #expect {
            _ = try defaults.request(for: AddRequest(url: long))
        } throws: { error in
            guard let error = error as? HaulError else { return false }
            return error.code == .badURL && error.message.contains("too long") && error.message.count < 200
        }
        let fits = "http://example.com/" + String(repeating: "a", count: RemoteURL.maxLength - 19)
        #expect(try defaults.request(for: AddRequest(url: fits)).url.absoluteString == fits)
    }

    @Test(arguments: [
        "log", "save-session", "input-file", "on-download-complete", "on-download-error", "conf-path", "rpc-secret",
    ])
    func aria2OptionsNamingFilesOrCommandsAreRefusedByName(name: String) throws {
        let options: [String: JSONValue] = [name: .string("/tmp/x"), "max-concurrent-downloads": .string("2")]
        let defaults = DaemonDefaults(directory: "/srv/downloads", connections: 1)
        let attempts: [() throws -> Void] = [
            { _ = try Aria2Options.globalChange(options) },
            { _ = try Aria2Options.downloadChange(options) },
            { _ = try Aria2Options.addRequest(uri: "http://x/f", options: options, defaults: defaults) },
        ]
        for attempt in attempts {
            #expect {
                try attempt()
            } throws: { error in
                guard let error = error as? Aria2Error else { return false }
                return error.code == 1 && error.message.contains("'--\(name)'")
                    && error.message.contains("cannot be set over RPC")
            }
        }
        // Options haul does not know stay accepted and ignored, as aria2 ignores them.
        #expect(try Aria2Options.globalChange(["no-such-option": .string("1")]).maxConcurrentDownloads == nil)
    }

    /// What lets a connection past the `ConnectionGuard`'s cap and a WebSocket have notifications:
    /// the valid token in any call of a request, a batch or a `system.multicall`.
    @Test func anAria2RequestShowsTheTokenOnlyWhenSomeCallCarriesTheRightOne() async throws {
        let directory = NSTemporaryDirectory() + "haul-rpc-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let manager = try await DownloadManager(configuration: .init(stateDirectory: directory))
        let rpc = Aria2RPC(
            manager: manager, defaults: DaemonDefaults(directory: directory, connections: 1), secret: "right-token",
            logger: Logger(label: "test"), shutdown: {})
        func shows(_ json: String) async -> Bool { await rpc.answer(Array(json.utf8)).authenticated }
        let good = #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:right-token"]}"#
        let wrong = #"{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion","params":["token:wrong-token"]}"#
        let none = #"{"jsonrpc":"2.0","id":3,"method":"system.listMethods"}"#
        #expect(await shows(good))
        #expect(!(await shows(wrong)))
        #expect(!(await shows(none)))
        #expect(await shows("[\(none),\(good)]"))
        #expect(!(await shows("[\(none),\(wrong)]")))
        let multicall =
            #"{"jsonrpc":"2.0","id":4,"method":"system.multicall","params":[[{"methodName":"aria2.getVersion","params":["token:TOKEN"]}]]}"#
        #expect(await shows(multicall.replacingOccurrences(of: "TOKEN", with: "right-token")))
        #expect(!(await shows(multicall.replacingOccurrences(of: "TOKEN", with: "wrong-token"))))
        #expect(
            await rpc.answer(
                method: "aria2.getVersion", id: "5", params: Data(#"["token:right-token"]"#.utf8).base64EncodedString()
            ).authenticated)
        await manager.shutdown()
    }
}
