import HaulCore
import NIOConcurrencyHelpers

/// aria2's `followedBy` and `following`: an `addUri` of a name of content (`s3://BUCKET/PREFIX/`,
/// `hf://`, `oci://`) adds one download per file and answers the first one's gid; that one's
/// status lists the others (`followedBy`), and each of them names it (`following`), as aria2
/// links a Metalink's downloads to the download of the Metalink. Read at start from the groups
/// the store keeps (`load`), so a restart keeps them; as aria2's, a link stays when the result of
/// either of its downloads is removed (`removeDownloadResult`, `purgeDownloadResult`).
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
    /// too), each member's whether its result is still kept or not: aria2 keeps a link when
    /// either end's result is removed.
    func load(_ groups: [DownloadGroup]) {
        for group in groups { added(group.members) }
    }

    /// The downloads that followed `id`'s add; empty when none.
    func followedBy(_ id: DownloadID) -> [DownloadID] { links.withLockedValue { $0.followedBy[id] ?? [] } }

    /// The download whose add `id` followed; nil when none.
    func following(_ id: DownloadID) -> DownloadID? { links.withLockedValue { $0.following[id] } }

}
