import Foundation
import HaulAPI
import HaulTesting
import Testing

/// aria2's own client library (aria2p, from PyPI) and raw JSON-RPC over HTTP and WebSocket,
/// against `haul serve` and a real `aria2c --enable-rpc` in the same run:
/// Tests/Aria2RPC/aria2_compat.py sends every case to both and fails where haul's answer differs
/// from aria2's in shape (status, error code, keys, string-typed numbers, order). `.ci/run`
/// installs aria2 and the virtual environment `.build-venv/aria2`.
@Suite(
    .serialized, .timeLimit(.minutes(8)),
    .enabled(if: Aria2Compatibility.available, "needs aria2c and .build-venv/aria2 (.ci/run makes both)"))
struct Aria2CompatibilityTests {
    @Test func aria2ClientsGetTheAnswersAria2Gives() async throws {
        let world = try await World.make()
        world.server.setRoute("/small.bin", Route(payload: Payload(seed: 81, length: 300_000)))
        // A site that serves its file only to the page's visitor (aria2_compat.py's VISITOR).
        let visitor = [
            ("Referer", "https://shop.example/item?id=7"), ("User-Agent", "Mozilla/5.0 (compat) Firefox/140.0"),
            ("Cookie", "sid=s1; theme=dark"),
        ]
        var file = Route(payload: Payload(seed: 84, length: 200_000))
        file.requiredHeaders = visitor
        var redirect = Route(payload: file.payload, then: .redirect(to: "/visitor.bin"))
        redirect.requiredHeaders = visitor
        world.server.setRoute("/visitor.bin", file)
        world.server.setRoute("/visitor-redirect.bin", redirect)
        for name in ["slow", "slow2", "slow3"] {
            world.server.setRoute(
                "/\(name).bin", Route(payload: Payload(seed: 82, length: 64 << 20), throttle: 1 << 20))
        }
        let daemon = try await DaemonProcess.start(world)
        do {
            let script = try await PythonScript.run(
                python: Aria2Compatibility.python,
                [
                    Aria2Compatibility.script, "--haul", daemon.serve.url, "--secret", daemon.serve.secret,
                    "--files", world.server.url(""), "--aria2c", Aria2Compatibility.aria2c!,
                ])
            #expect(
                script.status == 0,
                "aria2_compat.py exited \(script.status):\n\(script.output)\ndaemon stderr: \(daemon.process.stderr)")
            let status = await daemon.terminate()
            #expect(
                status == 0,
                """
                haul serve exited \(status) on SIGTERM (an aria2 client may have shut it down): \
                \(daemon.process.stderr)
                """
            )
        } catch {
            await daemon.kill9()
            try await world.close()
            throw error
        }
        try await world.close()
    }
}

enum Aria2Compatibility {
    static let python = PythonScript.packageRoot + "/.build-venv/aria2/bin/python"
    static let script = PythonScript.packageRoot + "/Tests/Aria2RPC/aria2_compat.py"
    static let aria2c = ["/usr/bin/aria2c", "/usr/local/bin/aria2c"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let available = aria2c != nil && FileManager.default.isExecutableFile(atPath: python)
}
