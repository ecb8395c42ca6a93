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

