import Haul
import HaulCore
import Logging
import NIOConcurrencyHelpers

/// What the daemon writes after the files of a name of content are in: an `oci://` image's
/// layout (`index.json` last) and an `hf://` snapshot's links in the Hub's cache. Each is kept
/// on disk from the add (`PendingFinishes`, in `STATE/finishes/`) and written once the last of
/// its files is in: looked at when a download completes (or is found complete) beneath its
/// directory, and for all of them at start, so a restart between the last file and the finish
/// loses nothing.
final class DaemonFinishes: Sendable {
    private let kept: PendingFinishes
    private let logger: Logger
    private let pending = NIOLockedValueBox<[String: PendingFinish]>([:])

    /// Finishes kept in `folder`.
    init(folder: String, logger: Logger) {
        kept = PendingFinishes(folder: folder)
        self.logger = logger
    }

    /// Keeps the finish of an add, before its downloads are added; written at once when its
    /// files are all in already.
    func keep(_ finish: PendingFinish) async throws(HaulError) {
        let name = try await kept.keep(finish)
        pending.withLockedValue { $0[name] = finish }
        await check(name)
    }

    /// Writes the finishes whose files are in (those kept by the last process included), then
    /// each once a download brings its last file, until `events` end (the manager stopped).
    func observe(_ events: AsyncStream<DownloadEvent>) async {
        let logger = logger
        do {
            let found = try await kept.all { path, reason in
                logger.error(
                    "cannot read a pending finish; left in place", metadata: ["path": "\(path)", "error": "\(reason)"])
            }
            pending.withLockedValue { for one in found { $0[one.name] = one.pending } }
        } catch {
            logger.error("cannot read the pending finishes", metadata: ["error": "\(error)"])
        }
        await checkAll()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    let path: String
                    switch event.kind {
                    case .completed(let done), .alreadyComplete(let done): path = done
                    default: continue
                    }
                    let waiting = self.pending.withLockedValue {
                        $0.filter { $0.value.waits(for: path) }.keys.sorted()
                    }
                    for name in waiting { await self.check(name) }
                }
            }
            // In a fleet another host may bring the last file: its completion is not this
            // manager's event. Looked at every few seconds while any finish waits.
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: Self.interval)
                    } catch {
                        return // cancelled: the events ended
                    }
                    await self.checkAll()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// How often every waiting finish is looked at besides the completions this daemon sees.
    static let interval = Duration.seconds(5)

    private func checkAll() async {
        for name in pending.withLockedValue({ $0.keys.sorted() }) { await check(name) }
    }

    /// Writes the finish `name` and drops it when its files are all in.
    private func check(_ name: String) async {
        guard let finish = pending.withLockedValue({ $0[name] }) else { return }
        do {
            guard try await kept.finishIfReady(PendingFinishes.Kept(name: name, pending: finish)) else { return }
            pending.withLockedValue { $0[name] = nil }
            logger.info("finished a name of content", metadata: ["directory": "\(finish.directory)"])
        } catch {
            // Kept: the next completion beneath its directory, or the next start, tries again.
            logger.error(
                "cannot write what completes a name of content",
                metadata: ["directory": "\(finish.directory)", "error": "\(error)"])
        }
    }
}
