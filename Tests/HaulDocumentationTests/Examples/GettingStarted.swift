// The code of the article "Getting started" (Haul.docc/GettingStarted.md), block by block.
import Haul
import HaulCore
import HaulStore

/// Downloads one large file with a progress bar, and returns how it ended.
func downloadWithProgress(_ url: String, into directory: String, state: String) async throws -> DownloadOutcome {
    try await DownloadManager.withManager(configuration: .init(stateDirectory: state)) { manager in
        // Subscribed before the add, so no event of this download is missed.
        let events = manager.events()
        let request = try DownloadRequest(url: try RemoteURL(url), destination: .directory(directory), connections: 4)
        let record = try await manager.add(request)
        let bar = Task {
            for await event in events where event.id == record.id {
                if case .progress(let progress) = event.kind { print(progressLine(progress)) }
            }
        }
        defer { bar.cancel() }
        return try await manager.outcome(of: record.id)
    }
}

/// `[########----------]  42%  12.5 MiB/s  8 s left`
func progressLine(_ progress: Progress) -> String {
    let fraction = progress.fraction ?? 0
    let filled = Int(fraction * 20)
    let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 20 - filled)
    let speed = progress.bytesPerSecond / 1_048_576
    let left = progress.secondsRemaining.map { "\(Int($0.rounded())) s left" } ?? ""
    return "[\(bar)] \(Int(fraction * 100))%  \((speed * 10).rounded() / 10) MiB/s  \(left)"
}

/// Pauses a running download, then resumes it where it stopped.
func pauseThenResume(_ id: DownloadID, on manager: DownloadManager) async throws -> DownloadOutcome {
    try await manager.pause(id) // checkpointed: the bytes on disk are kept
    let paused = try await manager.download(id)
    print("paused with \(paused.completedLength) bytes on disk")
    try await manager.resume(id) // asks the server for the rest only (a Range request)
    return try await manager.outcome(of: id)
}

/// At the app's next start (after a quit, a crash or a reboot): the same state directory.
func resumeAfterRestart(state: String) async throws -> [DownloadOutcome] {
    let outcomes = try await DownloadManager.withManager(configuration: .init(stateDirectory: state)) { manager in
        let outcomes = manager.outcomes()
        // What was running starts again from its last checkpoint; what was paused stays paused.
        try await manager.restore()
        await manager.waitUntilIdle()
        return outcomes // ends at the shutdown, when the closure returns
    }
    var ended: [DownloadOutcome] = []
    for await outcome in outcomes { ended.append(outcome) }
    return ended
}

/// Asks for a file again: a finished download whose file is intact is not fetched twice.
func fetchAgain(_ url: String, into directory: String, state: String) async throws -> Bool {
    try await DownloadManager.withManager(configuration: .init(stateDirectory: state)) { manager in
        let request = try DownloadRequest(url: try RemoteURL(url), destination: .directory(directory))
        let record = try await manager.add(request)
        let outcome = try await manager.outcome(of: record.id) // at once: no request is sent
        return outcome.status == .completed
    }
}
