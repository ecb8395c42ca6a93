import Haul
import HaulCore
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An older daemon kept each name of content's finish in `STATE/finishes/*.json` until its files
/// were in, and wrote it from a poll of the disk. Now the queue finishes groups: at the first
/// start each such file becomes a group (its members the downloads holding its files), then is
/// removed. One that cannot be read is left, and said so.
enum PendingFinishImport {
    static func run(folder: String, into manager: DownloadManager, logger: Logger) async throws {
        let pending = PendingFinishes(folder: folder)
        let found = try await pending.all { path, reason in
            logger.error(
                "cannot read a pending finish; left in place", metadata: ["path": "\(path)", "error": "\(reason)"])
        }
        for kept in found {
            let group = DownloadGroup(
                id: .random(), name: kept.pending.directory, directory: kept.pending.directory, members: [],
                files: kept.pending.files, finish: kept.pending.finish, createdAt: Int64(Date().timeIntervalSince1970))
            try await manager.adopt(group)
            try await pending.drop(kept.name)
            logger.info("a pending finish became a group", metadata: ["directory": "\(kept.pending.directory)"])
        }
    }
}
