import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import HaulServer

/// `POST /api/v1/downloads` with `paused` and `position` (aria2's `pause` option and `addUri`'s
/// position), and with a key the add does not know: refused by name, never dropped (a dropped
/// `paused` started the download at once).
@Suite(.timeLimit(.minutes(1))) struct RESTAddPlacementTests {
    /// An add's answer: its status, and its body as JSON.
    private func add(_ client: any TestClientProtocol, _ body: String) async throws -> (HTTPResponse.Status, Any) {
        try await client.execute(
            uri: "/api/v1/downloads", method: .post, headers: DaemonRouterTests.authorized,
            body: ByteBuffer(string: body)
        ) { response in
            (response.status, try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)))
        }
    }

    private func id(_ view: Any) throws -> DownloadID {
        try DownloadID(parsing: (view as? [String: Any])?["id"] as? String ?? "")
    }

    /// A paused add is saved paused and asks the server nothing: with one download at a time,
    /// the add after it completes, and the paused one's URL was never requested.
    @Test func aPausedAddSendsNoRequest() async throws {
        try await DaemonRouterTests().withRoutes(jobs: 1) { client, manager, server in
            server.setRoute("/paused", Route(payload: Payload(seed: 1, length: 100_000)))
            server.setRoute("/next", Route(payload: Payload(seed: 2, length: 100_000)))
            let (status, view) = try await add(client, #"{"url": "\#(server.url("/paused"))", "paused": true}"#)
            #expect(status == .created)
            #expect((view as? [String: Any])?["status"] as? String == "paused")
            let paused = try id(view)
            let (_, next) = try await add(client, #"{"url": "\#(server.url("/next"))"}"#)
            // Had the paused one started, it would have held the only slot before this one ran.
            #expect(try await manager.outcome(of: id(next)).status == .completed)
            #expect(server.requests(to: "/paused").isEmpty)
            #expect(try await manager.record(paused)?.status == .paused)
        }
    }

    /// `position` is the index in the waiting list, as `addUri`'s third parameter; in an array,
    /// each add's own.
    @Test func aPositionPlacesTheAddInTheWaitingList() async throws {
        try await DaemonRouterTests().withRoutes(jobs: 1) { client, manager, server in
            // Holds the only slot for the whole test.
            server.setRoute("/running", Route(payload: Payload(seed: 3, length: 50_000_000), throttle: 50_000))
            for name in ["b", "c", "d", "e", "f"] {
                server.setRoute("/\(name)", Route(payload: Payload(seed: 4, length: 10_000)))
            }
            _ = try await add(client, #"{"url": "\#(server.url("/running"))"}"#)
            let b = try id(try await add(client, #"{"url": "\#(server.url("/b"))"}"#).1)
            let c = try id(try await add(client, #"{"url": "\#(server.url("/c"))"}"#).1)
            let (status, d) = try await add(client, #"{"url": "\#(server.url("/d"))", "position": 0}"#)
            #expect(status == .created)
            let (_, batch) = try await add(
                client,
                #"[{"url": "\#(server.url("/e"))", "position": 2}, {"url": "\#(server.url("/f"))", "paused": true}]"#)
            let added = try #require(batch as? [Any])
            let (e, f) = (try id(added[0]), try id(added[1]))
            #expect(try await manager.waitingIDs() == [try id(d), b, e, c, f])
            #expect(try await manager.record(f)?.status == .paused)
        }
    }

    /// A key the add does not know is a 400 `bad-request` naming it (and, in an array, where),
    /// and nothing of the body is added; a negative position is refused too.
    @Test func anUnknownKeyIsRefusedByName() async throws {
        try await DaemonRouterTests().withRoutes { client, manager, server in
            server.setRoute("/f", Route(payload: Payload(seed: 5, length: 10_000)))
            let url = server.url("/f")
            for (body, code, named) in [
                (#"{"url": "\#(url)", "pasued": true}"#, "bad-request", "unknown key 'pasued'"),
                (
                    #"[{"url": "\#(url)?1"}, {"url": "\#(url)?2", "postion": 0}]"#, "bad-request",
                    "[1]: unknown key 'postion'"
                ),
                (#"{"url": "\#(url)", "position": -1}"#, "usage", "position must be 0 or more"),
            ] {
                let (status, view) = try await add(client, body)
                let error = (view as? [String: Any])?["error"] as? [String: Any]
                #expect(status == .badRequest, "\(body)")
                #expect(error?["code"] as? String == code, "\(body)")
                #expect((error?["message"] as? String)?.contains(named) == true, "\(view)")
            }
            #expect(try await manager.ids(status: nil).isEmpty)
            #expect(server.requests.isEmpty)
        }
    }

    /// Every field an `AddRequest` has is a key the daemon takes: what `haul add` sends is never
    /// refused.
    @Test func everyFieldOfAnAddIsAKnownKey() {
        let fields = Mirror(reflecting: AddRequest(url: "http://x/")).children.compactMap(\.label)
        #expect(fields.count > 5)
        #expect(Set(fields).subtracting(AddRequest.knownKeys).isEmpty, "\(fields)")
    }
}
