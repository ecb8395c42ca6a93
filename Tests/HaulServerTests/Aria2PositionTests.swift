import Foundation
import HaulCore
import HaulServer
import HaulTesting
import Testing

/// `addUri` with a position, when a free slot takes the download at once: the download has no
/// place in the queue to take, and the call still answers its gid (it used to answer "not found
/// in the waiting queue" whenever the run had not stored `running` yet).
@Suite(.timeLimit(.minutes(2))) struct Aria2PositionTests {
    @Test func anAddThatStartsAtOnceAnswersItsGid() async throws {
        let root = NSTemporaryDirectory() + "haul-position-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await TestServer.start()
        server.setRoute("/slow", Route(payload: Payload(seed: 9, length: 50_000_000), throttle: 100_000))
        let configuration = Daemon.Configuration(port: 0, home: root + "/home", downloadDirectory: root + "/downloads",
                                                 maxConcurrentDownloads: 8)
        let api = try await DaemonAPI.start(configuration)
        do {
            for index in 0..<8 {
                // Each finds a free slot: it starts while addUri puts it at position 0.
                let answer = try await api.rpc("aria2.addUri", #"["\#(server.url("/slow"))?n=\#(index)"], {"out": "f\#(index).bin"}, 0"#)
                #expect(answer.contains(#""result":""#), "\(index): \(answer)")
            }
            // All eight run (each stores `running` when its run begins).
            var active = ""
            for _ in 0..<2_000 {
                active = try await api.rpc("aria2.tellActive", #"["gid"]"#)
                if active.components(separatedBy: "gid").count - 1 == 8 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(active.components(separatedBy: "gid").count - 1 == 8, "\(active)")
            try await api.stop()
        } catch {
            try? await api.stop()
            try await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }
}
