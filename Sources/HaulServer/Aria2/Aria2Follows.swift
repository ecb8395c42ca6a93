import HaulCore
import NIOConcurrencyHelpers

/// aria2's `followedBy` and `following`: an `addUri` of a name of content (`s3://BUCKET/PREFIX/`,
/// `hf://`, `oci://`) adds one download per file and answers the first one's gid; that one's
/// status lists the others (`followedBy`), and each of them names it (`following`), as aria2
/// links a Metalink's downloads to the download of the Metalink. Read at start from the groups
/// the store keeps (`load`), so a restart keeps them; a result removed drops its links.
final class Aria2Follows: Sendable {
    private struct Links {
        var followedBy: [DownloadID: [DownloadID]] = [:]
        var following: [DownloadID: DownloadID] = [:]
    }

    private let links = NIOLockedValueBox(Links())

    /// The downloads one `addUri` added, in order: the first answered the call.
    func added(_ ids: [DownloadID]) {
        guard let first = ids.first, ids.count > 1 else { return }
        let others = Array(ids.dropFirst().filter { $0 != first })
        links.withLockedValue { links in
            links.followedBy[first, default: []] += others
            for id in others { links.following[id] = first }
        }
    }

    /// The links of every group the store keeps (a name of content's downloads, after a restart
    /// too), members whose records are gone left out.
    func load(_ groups: [DownloadGroup], existing: Set<DownloadID>) {
        for group in groups { added(group.members.filter(existing.contains)) }
    }

    /// The downloads that followed `id`'s add; empty when none.
    func followedBy(_ id: DownloadID) -> [DownloadID] { links.withLockedValue { $0.followedBy[id] ?? [] } }

    /// The download whose add `id` followed; nil when none.
    func following(_ id: DownloadID) -> DownloadID? { links.withLockedValue { $0.following[id] } }

    /// `id`'s result is gone (`removeDownloadResult`, `purgeDownloadResult`): so are its links.
    func forget(_ ids: [DownloadID]) {
        links.withLockedValue { links in
            for id in ids {
                for other in links.followedBy.removeValue(forKey: id) ?? [] { links.following[other] = nil }
                if let first = links.following.removeValue(forKey: id) {
                    links.followedBy[first]?.removeAll { $0 == id }
                    if links.followedBy[first]?.isEmpty == true { links.followedBy[first] = nil }
                }
            }
        }
    }
}
