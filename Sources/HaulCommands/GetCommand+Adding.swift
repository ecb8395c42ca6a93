import Haul
import HaulCore
import NIOConcurrencyHelpers

/// How `haul get` adds what it was asked for: batch after batch (`AddBatches`), each followed
/// to its end, a name of content's files with their group.
extension GetCommand {
    /// Builds and adds the requests a thousand at a time: each batch once the previous one is
    /// committed, each followed to its end; returns once all have ended. A name of content's
    /// files go in one batch with their group, whose finish the queue writes before the last
    /// member's outcome; one whose finish failed is reported once its batch ended. Stops adding
    /// when `stop` is set (a signal): the batches already added are still followed.
    func add(
        _ entries: [Entry], groups: [DownloadQueue.GroupAsk], template: RequestTemplate, to manager: DownloadManager,
        until stop: NIOLockedValueBox<Bool>, post: AsyncStream<Input>.Continuation
    ) async {
        var seen: Set<String> = []
        await withTaskGroup(of: Void.self) { group in
            for planned in AddBatches.plan(count: entries.count, groups: groups) {
                if stop.withLockedValue({ $0 }) { break }
                let (requests, asks) = batch(
                    planned, of: entries, template: template, seen: &seen,
                    rejected: { post.yield(.rejected(url: $0, $1)) })
                let (committed, commit) = AsyncStream<Void>.makeStream()
                group.addTask {
                    do {
                        for try await item in manager.addFollowing(requests, groups: asks) {
                            post.yield(.followed(item))
                            if case .added = item { commit.finish() }
                        }
                        for ask in asks { await Self.check(ask.group.id, of: manager, post: post) }
                    } catch {
                        let haulError = HaulError.from(error, otherwise: .internal)
                        // Interrupted: these were never added, so nothing waits for them.
                        if haulError.code != .interrupted {
                            for request in requests {
                                post.yield(.rejected(url: request.url.absoluteString, haulError))
                            }
                        }
                    }
                    commit.finish()
                }
                // The next batch goes in once this one is committed (or refused).
                for await _ in committed {}
            }
        }
    }

    /// The requests of one planned batch, and its groups with their offsets among them. The same
    /// URL twice is one download (as within one `add`), but a group's files all go in: its
    /// members are the downloads they become. A group one of whose requests cannot be made is
    /// dropped and reported: its finish would name a file that never comes.
    func batch(
        _ planned: AddBatches.Batch, of entries: [Entry], template: RequestTemplate, seen: inout Set<String>,
        rejected: (String?, HaulError) -> Void
    ) -> (requests: [DownloadRequest], groups: [DownloadQueue.GroupAsk]) {
        let base = planned.range.lowerBound
        let members = Set(planned.groups.flatMap { $0.offsets.map { $0 + base } })
        var requests: [DownloadRequest] = []
        var placed: [Int: Int] = [:]
        for index in planned.range {
            do throws(HaulError) {
                let request = try template.request(for: entries[index])
                if seen.insert(request.identity).inserted || members.contains(index) {
                    placed[index - base] = requests.count
                    requests.append(request)
                }
            } catch {
                rejected(nil, error)
            }
        }
        return (
            requests,
            planned.groups.compactMap { ask in
                guard let first = ask.offsets.first else { return DownloadQueue.GroupAsk(ask.group, offsets: 0..<0) }
                guard let from = placed[first], ask.offsets.allSatisfy({ placed[$0] != nil }) else {
                    rejected(ask.group.name, HaulError(.usage, "not every file of \(ask.group.name) can be downloaded"))
                    return nil
                }
                return DownloadQueue.GroupAsk(ask.group, offsets: from..<from + ask.offsets.count)
            }
        )
    }

    /// A group whose finish failed, once its batch ended: reported, and the command fails (a
    /// group still waiting has a member that did not complete, reported as such).
    static func check(_ id: GroupID, of manager: DownloadManager, post: AsyncStream<Input>.Continuation) async {
        do {
            guard let group = try await manager.group(id), group.state == .failed else { return }
            let why = group.error ?? "what completes it could not be written"
            post.yield(.rejected(url: group.name, HaulError(.fileSystem, "cannot complete \(group.name): \(why)")))
        } catch {
            post.yield(.rejected(url: nil, HaulError.from(error, otherwise: .store)))
        }
    }
}
