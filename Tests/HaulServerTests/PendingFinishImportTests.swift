import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Logging
import Testing

@testable import HaulServer

/// An older daemon kept each name of content's finish as a JSON file in `STATE/finishes/`: the
/// first start of this one makes each a group of the downloads holding its files, removes the
/// file, and the queue writes the finish once those downloads complete.
@Suite(.timeLimit(.minutes(1))) struct PendingFinishImportTests {
    @Test func anOlderDaemonsPendingFinishBecomesAGroupWrittenOnceItsDownloadCompletes() async throws {
        let root = NSTemporaryDirectory() + "haul-pending-\(UUID().uuidString)"
        let (state, cache) = (root + "/state", root + "/cache")
        for path in [state + "/finishes", cache] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await TestServer.start()
        let payload = Payload(seed: 7, length: 60_000)
        server.setRoute("/a.bin", Route(payload: payload))
        // As the older daemon wrote it (its JSON form, by hand): one file, the Hub cache's finish.
        let kept = """
            {"directory":"\(cache)","files":[{"path":"blobs/a.bin","size":60000}],"finish":{"hubCache":{"_0":\
            {"links":[{"link":"snapshots/c0ffee/a.bin","target":"../../blobs/a.bin"}],\
            "ref":{"path":"refs/main","commit":"c0ffee"}}}}}
            """
        try Data(kept.utf8).write(to: URL(fileURLWithPath: state + "/finishes/1.json"))
        try await DownloadManager.withManager(configuration: .init(stateDirectory: state)) { manager in
            // The download it waited for, as that daemon left it: paused, its name given.
            let request = try DownloadRequest(
                url: RemoteURL(server.url("/a.bin")), destination: .file(cache + "/blobs/a.bin"))
            let record = try await manager.add([request], placements: [AddPlacement(startsPaused: true)])[0]
            try await PendingFinishImport.run(
                folder: state + "/finishes", into: manager, logger: Logger(label: "test"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/finishes").isEmpty)
            let group = try #require(try await manager.groups(containing: record.id).first)
            #expect(group.members == [record.id] && group.directory == cache && group.state == .waiting)
            try await manager.restore()
            #expect(!FileManager.default.fileExists(atPath: cache + "/refs/main"), "not before its file is in")
            let outcomes = manager.outcomes()
            _ = try await manager.resume([record.id])
            for await outcome in outcomes where outcome.id == record.id { break }
            #expect(FileManager.default.contents(atPath: cache + "/refs/main") == Data("c0ffee".utf8))
            #expect(try await manager.groups(containing: record.id).first?.state == .finished)
        }
        try await server.shutdown()
    }
}
