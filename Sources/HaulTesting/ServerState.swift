import NIOConcurrencyHelpers
import NIOHTTP1

/// Everything the test server shares between the test and its connections, behind one lock.
///
/// Connections run on an event loop while the test reads and changes routes from its own tasks,
/// so all mutable state lives here and every operation is a single short critical section.
final class ServerState: Sendable {
    /// What a request is answered with, decided atomically with the per-route request count.
    struct Decision {
        var route: Route?
        var fault: Fault
        /// `http://host:port`, for absolute redirect URLs.
        var origin: String
        /// Set when the route's connection cap turns the request away.
        var refusal: ConnectionCap? = nil
        /// Body bytes per second for this request: the route's throttle, or its connection's.
        var throttle: Int? = nil
    }

    private struct Slot {
        var route: Route
        var requestCount = 0
        /// Every request to the path, refused ones included (for ``BodyGate``).
        var arrivals = 0
        /// Connection serial number -> its position among the connections that asked this route.
        var connectionOrder: [Int: Int] = [:]
    }

    private struct LogEntry {
        var response: ServedResponse
        /// Counted in `Storage.inFlight` until ended.
        var inFlight: Bool
    }

    private struct Storage {
        var origin = ""
        var routes: [String: Slot] = [:]
        var requests: [RecordedRequest] = []
        var bodyBytes: [String: Int64] = [:]
        var connectionsOpened = 0
        /// Every response, in order of arrival of its request; a response's id is its index.
        var responses: [LogEntry] = []
        /// Payload responses per path whose body is still being streamed.
        var inFlight: [String: Int] = [:]
        var peakInFlight: [String: Int] = [:]
        /// Payload responses to any path in flight at once, now and at most.
        var allInFlight = 0
        var peakAllInFlight = 0
        var connectionsByPath: [String: Set<Int>] = [:]
        /// Connections a ``Fault/holdAfter(_:)`` held.
        var held = 0
    }

    private let storage = NIOLockedValueBox(Storage())
    /// Tasks waiting for a condition on what the server has seen (``TestServer/wait(until:)``):
    /// checked after every change below, outside the storage lock.
    let changes = Waiters()

    var origin: String {
        get { storage.withLockedValue { $0.origin } }
        set { storage.withLockedValue { $0.origin = newValue } }
    }

    func setRoute(_ path: String, _ route: Route) {
        storage.withLockedValue { $0.routes[path] = Slot(route: route) }
    }

    /// A new server-wide serial number for an accepted TCP connection.
    func openConnection() -> Int {
        defer { changes.changed() }
        return storage.withLockedValue { storage in
            defer { storage.connectionsOpened += 1 }
            return storage.connectionsOpened
        }
    }

    /// TCP connections accepted so far (a TLS one whose handshake failed included).
    var connectionsAccepted: Int {
        storage.withLockedValue { $0.connectionsOpened }
    }

    func hold() {
        storage.withLockedValue { $0.held += 1 }
        changes.changed()
    }

    var held: Int {
        storage.withLockedValue { $0.held }
    }

    /// Returns the request's place in the log, for ``appendBody(_:toRequest:)``.
    @discardableResult
    func record(_ request: RecordedRequest, connection: Int) -> Int {
        defer { changes.changed() }
        return storage.withLockedValue {
            $0.requests.append(request)
            $0.connectionsByPath[request.path, default: []].insert(connection)
            return $0.requests.count - 1
        }
    }

    func appendBody(_ bytes: [UInt8], toRequest index: Int) {
        storage.withLockedValue { $0.requests[index].body += bytes }
        changes.changed()
    }

    var requests: [RecordedRequest] {
        storage.withLockedValue { $0.requests }
    }

    /// Decides the answer to a request and records it in the response log, in one critical
    /// section, so a connection cap sees every response that has started.
    ///
    /// Returns the plan and the id under which the handler reports the body's progress
    /// (``addBodyBytes(_:response:)``) and end (``endResponse(_:)``). A plan with a payload body
    /// counts as in flight from here on.
    func respond(method: HTTPMethod, requestHeaders: HTTPHeaders, path: String, connection: Int) -> (
        plan: ResponsePlan, id: Int
    ) {
        defer { changes.changed() }
        return storage.withLockedValue { storage in
            let decision = Self.decide(for: path, connection: connection, in: &storage)
            let plan = ResponsePlan(method: method, requestHeaders: requestHeaders, decision: decision)
            var range: Range<Int64>?
            if case .payload(_, let bodyRange) = plan.body {
                range = bodyRange
                let count = storage.inFlight[path, default: 0] + 1
                storage.inFlight[path] = count
                storage.peakInFlight[path] = max(storage.peakInFlight[path] ?? 0, count)
                storage.allInFlight += 1
                storage.peakAllInFlight = max(storage.peakAllInFlight, storage.allInFlight)
            }
            let response = ServedResponse(
                path: path,
                status: Int(plan.status.code),
                connection: connection,
                range: range,
                refused: decision.refusal != nil,
                throttle: range == nil ? nil : plan.throttle
            )
            storage.responses.append(LogEntry(response: response, inFlight: range != nil))
            return (plan, storage.responses.count - 1)
        }
    }

    /// Counts body bytes that reached the kernel for response `id`.
    func addBodyBytes(_ count: Int64, response id: Int) {
        storage.withLockedValue { storage in
            storage.responses[id].response.bodyBytesSent += count
            storage.bodyBytes[storage.responses[id].response.path, default: 0] += count
        }
        changes.changed()
    }

    /// The response's body is finished or its connection closed; safe to call more than once.
    func endResponse(_ id: Int) {
        storage.withLockedValue { storage in
            guard storage.responses[id].inFlight else { return }
            storage.responses[id].inFlight = false
            storage.inFlight[storage.responses[id].response.path, default: 1] -= 1
            storage.allInFlight -= 1
        }
        changes.changed()
    }

    func bodyBytes(to path: String) -> Int64 {
        storage.withLockedValue { $0.bodyBytes[path] ?? 0 }
    }

    func responses(to path: String?) -> [ServedResponse] {
        storage.withLockedValue { storage in
            storage.responses.compactMap { path == nil || $0.response.path == path ? $0.response : nil }
        }
    }

    func peakInFlight(to path: String) -> Int {
        storage.withLockedValue { $0.peakInFlight[path] ?? 0 }
    }

    func peakInFlight() -> Int {
        storage.withLockedValue { $0.peakAllInFlight }
    }

    /// The path's body gate, while it is still closed; nil once open or when there is none.
    func closedGate(for path: String) -> BodyGate? {
        storage.withLockedValue { storage in
            guard let slot = storage.routes[path], let gate = slot.route.bodyGate, slot.arrivals < gate.requests else {
                return nil
            }
            return gate
        }
    }

    func connectionCount(to path: String) -> Int {
        storage.withLockedValue { $0.connectionsByPath[path]?.count ?? 0 }
    }

    /// Counts a request to `path`, picks its fault from the route's script, and applies
    /// `.switchEntity` before returning the route as this request must see it. A request the
    /// connection cap refuses leaves the script where it is.
    private static func decide(for path: String, connection: Int, in storage: inout Storage) -> Decision {
        guard var slot = storage.routes[path] else {
            return Decision(route: nil, fault: .none, origin: storage.origin)
        }
        slot.arrivals += 1
        let order: Int
        if let known = slot.connectionOrder[connection] {
            order = known
        } else {
            order = slot.connectionOrder.count
            slot.connectionOrder[connection] = order
        }
        defer { storage.routes[path] = slot }

        if let cap = slot.route.connectionCap, storage.inFlight[path, default: 0] >= cap.limit {
            return Decision(route: slot.route, fault: .none, origin: storage.origin, refusal: cap)
        }

        let index = slot.requestCount
        slot.requestCount += 1
        let fault = index < slot.route.script.count ? slot.route.script[index] : slot.route.then
        if case .switchEntity(let payload, let etag) = fault {
            slot.route.payload = payload
            slot.route.etag = etag
            slot.route.lastModified = nil
        }
        let throttle = slot.route.connectionThrottles.map { $0[order % $0.count] } ?? slot.route.throttle
        var route = slot.route
        if route.validatorQuirk == .etagPerRequest, let etag = route.etag {
            // A tokenised URL: every answer carries a new ETag for the same bytes.
            route.etag = "\"" + String(etag.filter { $0 != "\"" }) + "-\(index)\""
        }
        return Decision(route: route, fault: fault, origin: storage.origin, throttle: throttle)
    }
}
