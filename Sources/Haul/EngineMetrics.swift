import CoreMetrics

/// What the engine measures itself, through swift-metrics with the factory the manager is given
/// (the daemon's exports to Prometheus at `/metrics`); without one, nothing is recorded.
/// Counts of downloads, bytes and restarts come from events and the store; what only the engine
/// sees is here: how long a checkpoint's two steps take.
struct EngineMetrics: Sendable {
    /// The `.part`'s fsync.
    let sync: Timer
    /// The store's write of the durable offsets (a SQLite transaction with `synchronous=FULL`).
    let store: Timer

    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? NOOPMetricsHandler.instance
        sync = Timer(label: "haul_checkpoint_seconds", dimensions: [("step", "fsync")], factory: factory)
        store = Timer(label: "haul_checkpoint_seconds", dimensions: [("step", "store")], factory: factory)
    }

    /// Runs `body` and records how long it took, thrown or not.
    func time<T>(_ timer: Timer, _ body: () async throws -> T) async rethrows -> T {
        let start = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - start
            timer.recordNanoseconds(
                elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        }
        return try await body()
    }
}
