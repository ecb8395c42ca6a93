import NIOCore
import Testing

@testable import HaulServer

/// Which aria2 WebSockets hear notifications before they show the token
/// (`Aria2Routes.listensWithoutToken`): a loopback peer that is not a browser, with no `Origin`
/// or one naming the daemon's own address (aria2p's listener, through websocket-client), and no
/// other.
@Suite(.timeLimit(.minutes(1))) struct Aria2ListenerTests {
    let loopback = try! SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
    let authority = "127.0.0.1:6800"

    func listens(origin: String?, fetchSite: String? = nil, peer: SocketAddress?) -> Bool {
        Aria2Routes.listensWithoutToken(origin: origin, authority: authority, fetchSite: fetchSite, peer: peer)
    }

    @Test func aScriptOnThisMachineListens() throws {
        #expect(listens(origin: nil, peer: loopback))
        #expect(listens(origin: nil, peer: try SocketAddress(ipAddress: "::1", port: 50_000)))
        // An IPv4 peer as a socket bound to :: sees it.
        #expect(listens(origin: nil, peer: try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 50_000)))
        // websocket-client's default: the URL's own scheme and host.
        #expect(listens(origin: "http://127.0.0.1:6800", peer: loopback))
    }

    @Test func aBrowserAnotherOriginOrAnotherHostDoesNot() throws {
        // The daemon's own page in a browser: same Origin, but a browser's handshake.
        #expect(!listens(origin: "http://127.0.0.1:6800", fetchSite: "same-origin", peer: loopback))
        #expect(!listens(origin: nil, fetchSite: "none", peer: loopback))
        #expect(!listens(origin: "http://127.0.0.1:1", peer: loopback))
        #expect(!listens(origin: "null", peer: loopback))
        #expect(!listens(origin: nil, peer: try SocketAddress(ipAddress: "192.0.2.7", port: 50_000)))
        #expect(!listens(origin: nil, peer: try SocketAddress(ipAddress: "2001:db8::7", port: 50_000)))
        #expect(!listens(origin: nil, peer: try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 50_000)))
        #expect(!listens(origin: nil, peer: nil))
    }
}
