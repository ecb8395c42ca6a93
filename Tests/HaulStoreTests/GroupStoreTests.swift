import Foundation
import HaulCore
import HaulStore
import Testing

/// Groups of downloads in the state database: kept whole (the finish's bytes too), found by a
/// member, listed while unfinished, changed in place and deleted; and a database of the schema
/// before groups gains them without losing a download.
@Suite(.timeLimit(.minutes(2))) struct GroupStoreTests {
    let directory: String = {
        let path = NSTemporaryDirectory() + "haul-groups-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    static func image(_ name: String, members: [DownloadID], createdAt: Int64) -> DownloadGroup {
        let manifest = OCIManifest.Descriptor(
            mediaType: "application/vnd.oci.image.manifest.v1+json",
            digest: "sha256:" + String(repeating: "ab", count: 32), size: 3)
        return DownloadGroup(
            id: .random(), name: "oci://127.0.0.1:5000/\(name):1", directory: "/srv/layouts/\(name)", members: members,
            files: members.map { DownloadGroup.File(path: "blobs/sha256/\($0)", size: 7) },
            finish: .imageLayout(ImageLayoutFinish(manifest: manifest, manifestBytes: [0, 1, 255], name: "1")),
            createdAt: createdAt)
    }

    @Test func groupsAreKeptWholeFoundByAMemberAndListedWhileUnfinished() async throws {
        let store = try await SQLiteDownloadStore.open(path: directory + "/haul.sqlite")
        let a = DownloadID.random()
        let b = DownloadID.random()
        let c = DownloadID.random()
        var first = Self.image("first", members: [a, b], createdAt: 10)
        var hub = DownloadGroup(
            id: .random(), name: "hf://org/model", directory: "/cache", members: [b, c],
            finish: .hubCache(
                HubCacheFinish(
                    links: [.init(link: "snapshots/x/config.json", target: "../../blobs/1")],
                    ref: .init(path: "refs/main", commit: "x"))), createdAt: 20)
        try await store.saveGroup(first)
        try await store.saveGroup(hub)
        #expect(try await store.group(first.id) == first)
        #expect(try await store.groups(containing: a) == [first])
        #expect(try await store.groups(containing: b) == [first, hub])
        #expect(try await store.groups(containing: DownloadID.random()) == [])
        #expect(try await store.unfinishedGroups() == [first, hub])
        // A failed finish stays unfinished, with why; a finished one leaves the list.
        first.state = .failed
        first.error = "cannot write index.json: no space left on device"
        hub.state = .finished
        try await store.saveGroup(first)
        try await store.saveGroup(hub)
        #expect(try await store.unfinishedGroups() == [first])
        #expect(try await store.group(hub.id)?.state == .finished)
        try await store.deleteGroup(first.id)
        #expect(try await store.group(first.id) == nil)
        #expect(try await store.groups(containing: a) == [])
        try await store.close()
        // Durable: read back by another opening.
        let again = try await SQLiteDownloadStore.open(path: directory + "/haul.sqlite")
        #expect(try await again.group(hub.id) == hub)
        try await again.close()
    }
}
