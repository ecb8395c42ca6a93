import Foundation
import HaulAPI
import HaulTesting
import Testing

@testable import HaulServer

/// The web page of `haul serve` in a real browser: Tests/WebUI/webui_test.py drives headless
/// Chromium through Selenium against the real binary (add through the form, watch a download
/// complete live, pause, resume, a failed download's error, a 4-connection download's 4/4, the
/// concurrency and speed-limit options, 150 more downloads paged 100 at a time, pause all and
/// resume all). `.ci/run` installs chromium, chromium-driver and python3-selenium; elsewhere the
/// test runs when all three are there. Screenshots and the script's log (webui_test.log) of the
/// last run go to `.build/webui-screenshots`.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: WebBrowser.available, "needs chromium, chromedriver and python3 with selenium (.ci/run installs them)")
)
struct WebPageTests {
    let fast = Payload(seed: 41, length: 300_000)
    /// 256 MiB at 1 MiB/s over its one connection: still running when the page pages, however
    /// slow the machine. At 64 MiB it finished during a loaded run (95 s), left the top of the
    /// list, and the rows of pages 1 and 2 overlapped by one.
    let slow = Payload(seed: 42, length: 256 << 20)
    /// 32 MiB at 256 KiB/s per connection: 32 s over 4 connections, paused once the page shows 4/4.
    let multi = Payload(seed: 43, length: 32 << 20)
    /// 1 MiB at 64 KiB/s, added 150 times as `/batch.bin?n=...`: none finishes while the page pages.
    let batch = Payload(seed: 44, length: 1 << 20)

    @Test func addWatchPauseResumeOptionsAndPagingInHeadlessChromium() async throws {
        let world = try await World.make()
        world.server.setRoute("/fast.bin", Route(payload: fast))
        // No ranges: a download added without a count grows its connections while they raise its
        // speed (up to 16, 16 MiB/s here), and on a loaded machine it finished before the page
        // could pause it. Without ranges it has one connection (and starts over on a resume).
        world.server.setRoute("/slow.bin", Route(payload: slow, acceptsRanges: false, throttle: 1 << 20))
        world.server.setRoute("/multi.bin", Route(payload: multi, throttle: 256 << 10))
        world.server.setRoute("/missing.bin", Route(payload: fast, then: .status(404)))
        world.server.setRoute("/batch.bin", Route(payload: batch, throttle: 64 << 10))
        let daemon = try await DaemonProcess.start(world)
        do {
            let screenshots = WebBrowser.packageRoot + "/.build/webui-screenshots"
            try? FileManager.default.removeItem(atPath: screenshots)
            let script = try await WebBrowser.run([
                WebBrowser.script,
                "--page", daemon.serve.url + "/#token=" + daemon.serve.secret,
                "--fast-url", world.server.url("/fast.bin"),
                "--slow-url", world.server.url("/slow.bin"),
                "--multi-url", world.server.url("/multi.bin"),
                "--missing-url", world.server.url("/missing.bin"),
                "--batch-url", world.server.url("/batch.bin"),
                "--screenshots", screenshots,
            ])
            try? script.output.write(toFile: screenshots + "/webui_test.log", atomically: true, encoding: .utf8)
            #expect(
                script.status == 0,
                "webui_test.py exited \(script.status):\n\(script.output)\ndaemon stderr: \(daemon.process.stderr)")
            #expect(fast.mismatch(inFileAt: world.directory + "/fast.bin") == nil)
            #expect(
                world.server.connectionCount(to: "/multi.bin") >= 4, "the page showed 4/4 connections, so 4 connected")

            let status = await daemon.terminate()
            #expect(status == 0, "haul serve exited \(status) on SIGTERM: \(daemon.process.stderr)")
            #expect(
                !FileManager.default.fileExists(atPath: world.home + "/serve.json"), "a clean exit deletes serve.json")
        } catch {
            await daemon.kill9()
            try await world.close()
            throw error
        }
        try await world.close()
    }
}

/// What the page must never do, browser or not: load anything from elsewhere (the daemon may have
/// no internet) or show errors in dialogs.
@Suite(.timeLimit(.minutes(1))) struct WebPageSourceTests {
    @Test func loadsNothingFromElsewhereAndShowsNoDialogs() {
        for banned in ["http://", "https://", "@import", "alert(", "confirm(", "prompt(", "document.write"] {
            #expect(!WebPage.html.contains(banned), "the page contains \(banned)")
        }
        // Its two scripts and one style sheet are the daemon's own (nothing inline: the
        // Content-Security-Policy allows only 'self'), and nothing else is loaded. The limits'
        // script comes first: it only defines what the page's script calls.
        let scripts = WebPage.html.components(separatedBy: "<script").dropFirst()
        #expect(
            scripts.map { String($0.prefix(while: { $0 != ">" })) } == [
                #" src="/haul-limits.js" defer"#, #" src="/haul.js" defer"#,
            ],
            "\(scripts)")
        for banned in ["http://", "https://", "alert(", "confirm(", "document.write", "innerHTML"] {
            #expect(!WebPageLimits.script.contains(banned), "the limits' script contains \(banned)")
        }
        let links = WebPage.html.components(separatedBy: "<link").dropFirst()
        #expect(
            links.map { String($0.prefix(while: { $0 != ">" })) } == [
                #" rel="icon" href="data:,""#, #" rel="stylesheet" href="/haul.css""#,
            ])
    }
}

/// Headless Chromium through Selenium, when this machine has it.
enum WebBrowser {
    static let packageRoot = PythonScript.packageRoot
    static let script = packageRoot + "/Tests/WebUI/webui_test.py"

    static let available =
        ["chromium", "chromium-browser", "google-chrome"].contains { which($0) != nil }
        && which("chromedriver") != nil && python != nil

    /// The first python3 that can `import selenium`: Debian's python3-selenium is for
    /// /usr/bin/python3, which a pyenv or venv earlier on the PATH would hide.
    static let python: String? = {
        var candidates = ["/usr/bin/python3"]
        if let onPath = which("python3") { candidates.append(onPath) }
        return candidates.first { path in
            guard FileManager.default.isExecutableFile(atPath: path) else { return false }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["-c", "import selenium"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return false }
            process.waitUntilExit()
            return process.terminationStatus == 0
        }
    }()

    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return (path.split(separator: ":") + ["/usr/bin", "/usr/lib/chromium"])
            .map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs the Selenium python with `arguments`; the script's own waits are 60 s per step, so
    /// the time limit only catches a wedged browser.
    static func run(_ arguments: [String], limit: Duration = .seconds(600)) async throws -> (
        status: Int32, output: String
    ) {
        try await PythonScript.run(python: python!, arguments, limit: limit)
    }
}
