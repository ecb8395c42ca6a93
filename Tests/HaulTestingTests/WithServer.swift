import HaulTesting

/// Starts a server with `route` at `/f`, runs `body`, and always shuts the server down.
func withServer(
    _ route: Route? = nil,
    _ body: (TestServer) async throws -> Void
) async throws {
    let server = try await TestServer.start()
    if let route {
        server.setRoute("/f", route)
    }
    do {
        try await body(server)
    } catch {
        try await server.shutdown()
        throw error
    }
    try await server.shutdown()
}

/// Polls `condition` every 10 ms for up to 20 s; true once it holds. Used to sequence requests
/// (wait until the server has seen one before sending the next) and to wait for the server's
/// count of body bytes, which is taken once a write completes and may trail the client's
/// receiving them; never to time anything.
func eventually(_ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
        if condition() {
            return true
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
