import Foundation
import HaulCore
import HaulTesting
import Testing

/// `haul get --metalink URL` through the binary: the document is fetched from the test server
/// (through a redirect, with the command's headers and credentials) and its files, whose URLs
/// point at the same server, are downloaded as a local Metalink's are. A fetch that fails exits
/// as a download would (3 for an error status, 4 for no connection); a body that is no Metalink
/// exits 2 as a malformed local file does. Each failure is one line, and nothing is written.
@Suite(.timeLimit(.minutes(2))) struct MetalinkURLTests {
    func document(_ files: [(name: String, sha256: String, urls: [String])]) -> String {
        let entries = files.map { file in
            let urls = file.urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined()
            return "<file name=\"\(file.name)\"><hash type=\"sha-256\">\(file.sha256)</hash>\(urls)</file>"
        }
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
            + entries.joined() + "</metalink>\n"
    }

    @Test func theDocumentIsFetchedAndItsFilesDownloaded() async throws {
        let world = try await World.make()
        let disk = Payload(seed: 2121, length: 1_500_000)
        let notes = Payload(seed: 2122, length: 300_000)
        world.server.setRoute("/dead.iso", Route(payload: disk, then: .status(404)))
        world.server.setRoute("/disk.iso", Route(payload: disk))
        world.server.setRoute("/notes.txt", Route(payload: notes))
        let text = document([
            ("disk.iso", disk.sha256, [world.server.url("/dead.iso"), world.server.url("/disk.iso")]),
            ("notes.txt", notes.sha256, [world.server.url("/notes.txt")]),
        ])
        world.server.setRoute(
            "/files.meta4",
            Route(payload: disk, then: .document(text, headers: [("Content-Type", "application/metalink4+xml")])))
        world.server.setRoute("/latest.meta4", Route(payload: disk, then: .redirect(to: "/files.meta4")))
        let result = try await HaulProcess.run(
            ["get", "-H", "X-Token: t1", "-u", "ulla:pw", "--metalink", world.server.url("/latest.meta4")],
            in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(disk.mismatch(inFileAt: world.directory + "/disk.iso") == nil)
        #expect(notes.mismatch(inFileAt: world.directory + "/notes.txt") == nil)
        #expect(world.files() == ["disk.iso", "notes.txt"])
        // The document was asked once, after the redirect, as the downloads are asked.
        let asked = world.server.requests(to: "/files.meta4")
        #expect(asked.count == 1)
        #expect(asked.first?.header("X-Token") == "t1")
        #expect(asked.first?.header("Authorization") == "Basic " + Data("ulla:pw".utf8).base64EncodedString())
        #expect(
            asked.first?.header("User-Agent")?.hasPrefix("haul/") == true,
            "\(asked.first?.header("User-Agent") ?? "none")")
        #expect(world.server.requests(to: "/disk.iso").allSatisfy { $0.header("X-Token") == "t1" })
        try await world.close()
    }

    @Test func failuresAreOneLineWithTheExitOfTheirKind() async throws {
        let world = try await World.make()
        world.server.setRoute(
            "/login.meta4",
            Route(
                payload: Payload(seed: 2123, length: 10),
                then: .document("<html><body>Please log in</body></html>\n")))
        world.server.setRoute("/huge.meta4", Route(payload: Payload(seed: 2124, length: Int64(Metalink.maxBytes) + 1)))
        let refusing = try LoopbackPort.Refusing()
        let cases: [(url: String, status: Int32, stderr: String)] = [
            (
                world.server.url("/none.meta4"), 3,
                "haul: cannot fetch the Metalink \(world.server.url("/none.meta4")): HTTP 404 Not Found\n"
            ),
            (
                world.server.url("/login.meta4"), 2,
                "haul: \(world.server.url("/login.meta4")): not a Metalink: the root element is <html>\n"
            ),
            (
                world.server.url("/huge.meta4"), 2,
                "haul: \(world.server.url("/huge.meta4")): larger than 4 MiB, not a Metalink\n"
            ),
            (
                "http://127.0.0.1:\(refusing.port)/x.meta4", 4,
                "haul: cannot fetch the Metalink http://127.0.0.1:\(refusing.port)/x.meta4: Connection refused\n"
            ),
            (
                "ftp://127.0.0.1/x.meta4", 2,
                "haul: unsupported scheme 'ftp' in ftp://127.0.0.1/x.meta4 (only http and https)\n"
            ),
        ]
        for (url, status, stderr) in cases {
            let result = try await HaulProcess.run(["get", "--metalink", url], in: world)
            #expect(result.status == status, "\(url): \(result.stderr)")
            #expect(result.stderr == stderr, "\(url)")
        }
        // Nothing was written anywhere.
        #expect(world.files().isEmpty, "\(world.files())")
        withExtendedLifetime(refusing) {}
        try await world.close()
    }
}
