import Haul
import HaulAPI
import HaulCore
import Logging

/// The settings `started` and `progress` events report (`maxConnections`, `maxBytesPerSecond`).
/// A `DownloadEvent` carries neither, so each is read from the store once per download while it
/// runs and kept here, shared by every open event stream; a change through the API forgets the
/// entry, and any event that ends a run (paused, completed, ...) drops it.
actor DownloadSettingsCache {
    struct Settings: Sendable, Hashable {
        var maxConnections: Int
        var maxBytesPerSecond: Int64?
    }

    private let manager: DownloadManager
    private var entries: [DownloadID: Settings] = [:]
    /// Bumped by `forget`: a store read that began before a change must not be kept after it.
    private var generation: UInt64 = 0

    init(manager: DownloadManager) {
        self.manager = manager
    }

    /// Adds the settings to an event that reports them, and drops them at the end of a run.
    func annotate(_ view: EventView, id: DownloadID) async -> EventView {
        guard view.carriesSettings else {
            if view.type != .retrying, view.type != .restarted { entries[id] = nil }
            return view
        }
        guard let settings = await settings(id) else { return view }
        var view = view
        view.maxConnections = settings.maxConnections
        view.maxBytesPerSecond = settings.maxBytesPerSecond
        return view
    }

    func forget(_ id: DownloadID) {
        generation &+= 1
        entries[id] = nil
    }

    private func settings(_ id: DownloadID) async -> Settings? {
        if let known = entries[id] { return known }
        let started = generation
        let found: DownloadRecord?
        do {
            found = try await manager.record(id)
        } catch {
            // The event still goes out, without its settings; the next one reads them again.
            await manager.configuration.logger.warning(
                "cannot read a download's settings for its event",
                metadata: [
                    "id": "\(id)", "error": "\(error)",
                ])
            return nil
        }
        guard let record = found else { return nil }
        let settings = Settings(
            maxConnections: record.request.connections, maxBytesPerSecond: record.request.maxBytesPerSecond)
        if generation == started { entries[id] = settings }
        return settings
    }
}
