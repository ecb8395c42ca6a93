import Haul
import HaulCore
import Hummingbird
import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// `GET /metrics` in Prometheus's text format: swift-metrics objects on this daemon's own
/// registry (no process-wide bootstrap, so several daemons in one test process keep apart).
///
/// - `haul_downloads{status}`: downloads by status, read from the store at each scrape;
/// - `haul_download_speed_bytes_per_second`: all running downloads together, at the scrape;
/// - `haul_downloaded_bytes_total`: bytes received, from progress events (a restart's lost
///   bytes are not taken back);
/// - `haul_retries_total`, `haul_restarts_total{cause}`, `haul_downloads_finished_total{result}`;
/// - `haul_checkpoint_seconds{step}` (fsync, store): a histogram the engine records.
final class DaemonMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    private let bytes: Metrics.Counter
    private let retries: Metrics.Counter
    private let restarts: [RestartCause: Metrics.Counter]
    private let finished: [String: Metrics.Counter]
    private let downloads: [DownloadStatus: Metrics.Gauge]
    private let speed: Metrics.Gauge
    /// The last `completed` seen per running download, to count only what is new.
    private let lastCompleted = NIOLockedValueBox<[DownloadID: Int64]>([:])

    init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        let factory = PrometheusMetricsFactory(registry: registry)
        self.factory = factory
        bytes = Metrics.Counter(label: "haul_downloaded_bytes_total", factory: factory)
        retries = Metrics.Counter(label: "haul_retries_total", factory: factory)
        restarts = Dictionary(
            uniqueKeysWithValues: RestartCause.allCases.map {
                (
                    $0,
                    Metrics.Counter(
                        label: "haul_restarts_total", dimensions: [("cause", $0.rawValue)], factory: factory)
                )
            })
        finished = Dictionary(
            uniqueKeysWithValues: ["completed", "failed"].map {
                (
                    $0,
                    Metrics.Counter(
                        label: "haul_downloads_finished_total", dimensions: [("result", $0)], factory: factory)
                )
            })
        downloads = Dictionary(
            uniqueKeysWithValues: DownloadStatus.allCases.map {
                ($0, Metrics.Gauge(label: "haul_downloads", dimensions: [("status", $0.rawValue)], factory: factory))
            })
        speed = Metrics.Gauge(label: "haul_download_speed_bytes_per_second", factory: factory)
    }

    /// Counts what the events say until the stream ends (the manager's shutdown). Events may be
    /// dropped under load: they feed only the byte, retry and restart counters.
    func observe(_ events: AsyncStream<DownloadEvent>) async {
        for await event in events { note(event) }
    }

    /// Counts finished downloads from the outcomes, which are never dropped.
    func observe(outcomes: AsyncStream<DownloadOutcome>) async {
        for await outcome in outcomes { note(outcome) }
    }

    func note(_ outcome: DownloadOutcome) {
        switch outcome.status {
        case .completed where !outcome.alreadyComplete: finished["completed"]?.increment()
        case .failed: finished["failed"]?.increment()
        default: break
        }
    }

    func note(_ event: DownloadEvent) {
        switch event.kind {
        case .started(let offset):
            lastCompleted.withLockedValue { $0[event.id] = offset }
        case .progress(let progress):
            let new = lastCompleted.withLockedValue { last -> Int64 in
                defer { last[event.id] = progress.completed }
                return max(0, progress.completed - (last[event.id] ?? progress.completed))
            }
            if new > 0 { bytes.increment(by: new) }
        case .retrying: retries.increment()
        case .restarted(_, let cause):
            restarts[cause]?.increment()
            lastCompleted.withLockedValue { $0[event.id] = 0 }
        case .completed, .failed, .paused, .interrupted, .removed:
            lastCompleted.withLockedValue { $0[event.id] = nil }
        case .queued, .alreadyComplete, .finishFailed: break
        }
    }

    /// The text of one scrape, the store's counts read now.
    func scrape(_ manager: DownloadManager) async throws -> Response {
        let summary = try await manager.summary()
        for (status, gauge) in downloads { gauge.record(summary.counts[status] ?? 0) }
        speed.record(summary.downloadSpeed)
        var body = ByteBuffer()
        body.writeBytes(registry.emitToBuffer())
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: body))
    }
}
