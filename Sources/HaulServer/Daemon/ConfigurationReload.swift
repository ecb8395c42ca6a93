import Haul
import HaulCore
import Logging
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGHUP (`systemctl reload haul`): `haul serve` reads its configuration file again
/// (`Daemon.Configuration.reload`), applies the settings that can change while it runs (the
/// downloads at once, the connections of new downloads, the global limit and its schedule) and
/// names the changed options only a restart applies. A file that does not read changes nothing.
/// Without a reader, SIGHUP is logged and otherwise ignored: it never stops the daemon.
struct ReloadService: Service {
    /// Trapped before the service group starts, so a SIGHUP right after `READY=1` is not fatal.
    let hangups: UnixSignalsSequence
    let reload: (@Sendable () throws -> SettingsReload)?
    let target: ReloadTarget
    let logger: Logger

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            for await _ in hangups { await handle() }
        }
    }

    /// One SIGHUP: read, apply, say what changed and what did not.
    func handle() async {
        guard let reload else {
            logger.warning("SIGHUP: no configuration file to read again (haul serve --no-config)")
            return
        }
        SystemdNotify.send("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
        defer { SystemdNotify.send("READY=1") }
        let read: SettingsReload
        do {
            read = try reload()
        } catch {
            let message = (error as? HaulError)?.message ?? "\(error)"
            logger.error("configuration not reloaded, nothing changed: \(message)")
            return
        }
        await target.apply(read.changes)
        logger.info(
            "configuration reloaded",
            metadata: [
                "file": "\(read.file)",
                "changed": "\(read.changes.isEmpty ? "none" : read.changes.map(Self.describe).joined(separator: ", "))",
            ])
        if !read.needsRestart.isEmpty {
            logger.warning(
                "not changed until haul serve restarts: \(read.needsRestart.joined(separator: ", "))",
                metadata: ["file": "\(read.file)"])
        }
    }

    static func describe(_ change: SettingsReload.Change) -> String {
        switch change {
        case .maxConcurrentDownloads(let count): "jobs=\(count)"
        case .defaultConnections(let count): "connections=\(count)"
        case .maxBytesPerSecond(let rate): "limit-rate=\(rate.map(String.init) ?? "none")"
        case .limitSchedule(let schedule): "limit-schedule=\(schedule?.description ?? "none")"
        }
    }

    /// `CLOCK_MONOTONIC` in microseconds, as `RELOADING=1` wants it.
    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}

/// What a reload changes: the manager's slots, the defaults of new downloads and the global
/// limit's plan, each as the API would change it.
struct ReloadTarget: Sendable {
    let manager: DownloadManager
    let defaults: DaemonDefaults
    let scheduler: SpeedScheduler

    func apply(_ changes: [SettingsReload.Change]) async {
        var plan = scheduler.plan.current
        var replans = false
        for change in changes {
            switch change {
            case .maxConcurrentDownloads(let count):
                await manager.setMaxConcurrentDownloads(count)
            case .defaultConnections(let count):
                defaults.connections = count
            case .maxBytesPerSecond(let rate):
                plan.fallback = rate.flatMap(ByteRate.limit)
                replans = true
            case .limitSchedule(let schedule):
                plan.schedule = schedule
                defaults.limitSchedule = schedule
                replans = true
            }
        }
        guard replans else { return }
        scheduler.plan.current = plan
        scheduler.applyNow()
    }
}
