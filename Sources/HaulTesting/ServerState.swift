import NIOConcurrencyHelpers

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
    }

    private struct Slot {
        var route: Route
        var requestCount = 0
    }

    private struct Storage {
        var origin = ""
        var routes: [String: Slot] = [:]
        var requests: [RecordedRequest] = []
        var bodyBytes: [String: Int64] = [:]
    }

    private let storage = NIOLockedValueBox(Storage())

    var origin: String {
        get { storage.withLockedValue { $0.origin } }
        set { storage.withLockedValue { $0.origin = newValue } }
    }

    func setRoute(_ path: String, _ route: Route) {
        storage.withLockedValue { $0.routes[path] = Slot(route: route) }
    }

    func record(_ request: RecordedRequest) {
        storage.withLockedValue { $0.requests.append(request) }
    }

    var requests: [RecordedRequest] {
        storage.withLockedValue { $0.requests }
    }

    func addBodyBytes(_ count: Int64, to path: String) {
        storage.withLockedValue { $0.bodyBytes[path, default: 0] += count }
    }

    func bodyBytes(to path: String) -> Int64 {
        storage.withLockedValue { $0.bodyBytes[path] ?? 0 }
    }

    /// Counts a request to `path`, picks its fault from the route's script, and applies
    /// `.switchEntity` before returning the route as this request must see it.
    func decide(for path: String) -> Decision {
        storage.withLockedValue { storage in
            guard var slot = storage.routes[path] else {
                return Decision(route: nil, fault: .none, origin: storage.origin)
            }
            let index = slot.requestCount
            slot.requestCount += 1
            let fault = index < slot.route.script.count ? slot.route.script[index] : slot.route.then
            if case .switchEntity(let payload, let etag) = fault {
                slot.route.payload = payload
                slot.route.etag = etag
                slot.route.lastModified = nil
            }
            storage.routes[path] = slot
            return Decision(route: slot.route, fault: fault, origin: storage.origin)
        }
    }
}
