import Foundation
import HaulCore
import HaulTesting
import Testing

/// `haul get --load-cookies` and `--save-cookies` through the binary: the cookie goes to its own
/// host only, a login hop's `Set-Cookie` reaches the next hop and the saved file, the value is in
/// nothing haul prints or keeps, a bad file is one line and exit 15, and a resume after kill -9
/// sends the cookie again.
@Suite(.timeLimit(.minutes(2))) struct CookieEndToEndTests {
    let secret = "c00kie-s3cret"

    func cookieFile(_ world: World, _ text: String) throws -> String {
        let path = world.home + "-cookies.txt"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func loadedSentSetAcrossARedirectAndSaved() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2101, length: 300_000)
        world.server.setRoute(
            "/login",
            Route(
                payload: payload,
                then: .status(
                    302,
                    headers: [
                        ("Location", world.server.url("/dl/f.bin")), ("Set-Cookie", "session=\(secret)-set; Path=/dl"),
                    ])))
        world.server.setRoute("/dl/f.bin", Route(payload: payload))
        world.server.setRoute("/away.bin", Route(payload: payload))
        let load = try cookieFile(world, "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n")
        let save = world.home + "-saved.txt"
        let run = try await HaulProcess.run(
            [
                "get", "-v", "--json", "--load-cookies", load, "--save-cookies", save, "-o", "f.bin",
                world.server.url("/login"),
            ], in: world)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/f.bin") == nil)
        #expect(world.server.requests(to: "/login").first?.header("Cookie") == "sid=\(secret)")
        #expect(
            world.server.requests(to: "/dl/f.bin").first?.header("Cookie") == "session=\(secret)-set; sid=\(secret)")
        #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret))

        // Another host (the same server as localhost) gets none of them.
        let away = try await HaulProcess.run(
            ["get", "-q", "--load-cookies", save, "http://localhost:\(world.server.port)/away.bin"],
            in: world)
        #expect(away.status == 0, "\(away.stderr)")
        #expect(world.server.requests(to: "/away.bin").first?.header("Cookie") == nil)

        let saved = try String(contentsOfFile: save, encoding: .utf8)
        #expect(saved.contains("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n"), "\(saved)")
        #expect(saved.contains("127.0.0.1\tFALSE\t/dl\tFALSE\t0\tsession\t\(secret)-set\n"), "\(saved)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: save)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        // Nothing in haul's state holds a cookie.
        for name in try FileManager.default.subpathsOfDirectory(atPath: world.home) {
            let data = FileManager.default.contents(atPath: world.home + "/" + name) ?? Data()
            #expect(data.range(of: Data(secret.utf8)) == nil, "\(name)")
        }
        try await world.close()
    }

    @Test func aMalformedOrMissingFileIsOneLineAndExit15() async throws {
        let world = try await World.make()
        world.server.setRoute("/f.bin", Route(payload: Payload(seed: 2102, length: 1000)))
        let bad = try cookieFile(world, "# comment\n\n127.0.0.1\tFALSE\t/\tFALSE\tnever\tsid\t\(secret)\n")
        let malformed = try await HaulProcess.run(
            ["get", "--load-cookies", bad, world.server.url("/f.bin")], in: world)
        #expect(malformed.status == 15)
        #expect(
            malformed.stderr
                == "haul: \(bad), line 3: the expiry is not a number of seconds (a Netscape cookie file line is "
                + "DOMAIN, TRUE/FALSE, PATH, TRUE/FALSE, EXPIRY, NAME, VALUE separated by tabs)\n",
            "\(malformed.stderr)")
        let missing = try await HaulProcess.run(
            ["get", "--load-cookies", world.home + "-none", world.server.url("/f.bin")], in: world)
        #expect(missing.status == 15)
        #expect(missing.stderr == "haul: --load-cookies: no such file \(world.home)-none\n")
        #expect(world.server.requests(to: "/f.bin").isEmpty && world.files().isEmpty)
        try await world.close()
    }

    /// kill -9 mid-download, then the same command: the resumed request carries the cookie too.
    @Test func aResumeSendsTheCookiesAgain() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2103, length: 2_000_000)
        world.server.setRoute(
            "/big.bin", Route(payload: payload, throttle: 400_000, script: [.stallAfter(payload.length / 2)]))
        let load = try cookieFile(world, "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t\(secret)\n")
        let arguments = [
            "get", "-q", "--load-cookies", load, "--checkpoint-interval", "0.05", world.server.url("/big.bin"),
        ]
        let first = try HaulProcess(arguments, home: world.home, workingDirectory: world.directory)
        _ = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        _ = await first.wait()
        let before = world.server.requests(to: "/big.bin").count
        world.server.setRoute("/big.bin", Route(payload: payload))
        let second = try await HaulProcess.run(arguments, in: world)
        #expect(second.status == 0, "\(second.stderr)")
        let requests = world.server.requests(to: "/big.bin")
        #expect(requests.count > before && requests[before...].contains { $0.rangeStart > 0 }, "the second run resumed")
        #expect(requests.allSatisfy { $0.header("Cookie") == "sid=\(secret)" })
        #expect(payload.mismatch(inFileAt: world.directory + "/big.bin") == nil)
        try await world.close()
    }

    /// The same for `--user`: the resumed run's first request carries the credentials, which
    /// `haul get` never stores (the manager used to hand them over only after a re-added
    /// download had already started).
    @Test func aResumeSendsTheCredentialsAgain() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 2104, length: 2_000_000)
        world.server.setRoute(
            "/auth.bin", Route(payload: payload, throttle: 400_000, script: [.stallAfter(payload.length / 2)]))
        let arguments = [
            "get", "-q", "-u", "ulla:\(secret)", "--checkpoint-interval", "0.05", world.server.url("/auth.bin"),
        ]
        let first = try HaulProcess(arguments, home: world.home, workingDirectory: world.directory)
        _ = try await world.waitForCheckpoint(beyond: 0)
        first.signal(SIGKILL)
        _ = await first.wait()
        let before = world.server.requests(to: "/auth.bin").count
        world.server.setRoute("/auth.bin", Route(payload: payload))
        let second = try await HaulProcess.run(arguments, in: world)
        #expect(second.status == 0, "\(second.stderr)")
        let requests = world.server.requests(to: "/auth.bin")
        let expected = "Basic " + Data("ulla:\(secret)".utf8).base64EncodedString()
        #expect(requests.count > before && requests[before...].allSatisfy { $0.header("Authorization") == expected })
        #expect(payload.mismatch(inFileAt: world.directory + "/auth.bin") == nil)
        try await world.close()
    }
}
