// The code of the article "A custom store or transport" (Haul.docc/CustomStoreAndTransport.md).
import Haul
import HaulCore

/// A transport that adds a header to every request, then sends it through another transport:
/// a token that changes while a download runs, say, read when each request is sent.
struct SigningTransport: HTTPTransport {
    let base: any HTTPTransport
    let token: @Sendable () -> String

    func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
        var plan = plan
        plan.headers.add(name: "Authorization", value: "Bearer \(token())")
        return try await base.send(plan)
    }
}

/// Downloads `url` with every request signed, over haul's own HTTP client.
func downloadSigned(
    _ url: String, into directory: String, state: String, token: @escaping @Sendable () -> String
) async throws -> DownloadOutcome {
    let configuration = DownloadManager.Configuration(stateDirectory: state)
    try DownloadManager.prepareStateDirectory(state) // this init takes it as it is
    let http = AsyncHTTPTransport(configuration: configuration.http, logger: configuration.logger)
    let manager = DownloadManager(
        configuration: configuration, store: InMemoryDownloadStore(),
        transport: SigningTransport(base: http, token: token), clock: ClockAdapter(ContinuousClock()))
    // A transport you give is yours to close, after the manager (which shuts down as the closure ends).
    let outcome: Result<DownloadOutcome, any Error>
    do {
        outcome = .success(
            try await manager.withRunning { manager in
                let request = try DownloadRequest(url: try RemoteURL(url), destination: .directory(directory))
                return try await manager.outcome(of: try await manager.add(request).id)
            })
    } catch {
        outcome = .failure(error)
    }
    await http.shutdown()
    return try outcome.get()
}
