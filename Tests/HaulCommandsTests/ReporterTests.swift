import HaulAPI
import HaulCore
import Testing

@testable import HaulCommands

/// What `haul get` writes to a terminal, captured as text.
@Suite(.timeLimit(.minutes(1))) struct ReporterTests {
    final class Screen {
        var text = ""
    }

    func record(_ id: String, _ url: String) throws -> DownloadRecord {
        let request = try DownloadRequest(url: try RemoteURL(url), destination: .directory("/tmp/out"))
        return DownloadRecord(id: DownloadID(rawValue: id), request: request, createdAt: 0)
    }

    /// Two URLs that end the same way: until their records have names the rows show the URLs'
    /// last segment; once the files are named (here `report.pdf` from Content-Disposition and
    /// `get.1`, kept apart from a file already there), the rows show those names.
    @Test func rowsShowTheFilesNamesOnceKnown() throws {
        let screen = Screen()
        let reporter = Reporter(mode: .terminal, output: { screen.text += $0 }, terminalSize: { (100, 10) })
        let a = try record("a", "http://example.test/one/get?id=1")
        let b = try record("b", "http://example.test/two/get?id=2")
        reporter.added(a)
        reporter.added(b)
        let progress = HaulCore.Progress(completed: 10, total: 100, bytesPerSecond: 5, connections: 1)
        reporter.tick([a.id: progress, b.id: progress])
        #expect(screen.text.contains("get "))
        #expect(!screen.text.contains("report.pdf"))

        let wanted = reporter.namesWanted()
        #expect(Set(wanted) == [a.id, b.id])
        // Asked for once: a second tick before the answer asks for nothing.
        #expect(reporter.namesWanted().isEmpty)

        screen.text = ""
        reporter.named([a.id: "report.pdf"], asked: wanted)
        #expect(screen.text.contains("report.pdf"))
        // b had no name yet: asked for again; a is not.
        #expect(reporter.namesWanted() == [b.id])
        reporter.named([b.id: "get.1"], asked: [b.id])
        #expect(screen.text.contains("get.1"))
        #expect(reporter.namesWanted().isEmpty)
    }

    /// Names are read only for a terminal's rows: a pipe shows the summary line alone.
    @Test func noNamesAreReadWithoutATerminal() throws {
        let screen = Screen()
        let reporter = Reporter(mode: .plain, output: { screen.text += $0 }, terminalSize: { (100, 10) })
        let a = try record("a", "http://example.test/get")
        reporter.added(a)
        reporter.tick([a.id: HaulCore.Progress(completed: 1, total: 2, bytesPerSecond: 1, connections: 1)])
        #expect(reporter.namesWanted().isEmpty)
        #expect(screen.text.hasPrefix("[ 0/1 done"))
    }

    /// A download stopped by Ctrl-C keeps its bytes, and the last summary line counts them: it
    /// said `0 B` after a SIGINT while the `.part` kept 6 MB for the next run.
    @Test func theSummaryCountsTheBytesOfAStoppedDownload() throws {
        let screen = Screen()
        let reporter = Reporter(mode: .plain, output: { screen.text += $0 }, terminalSize: { (100, 10) })
        var a = try record("a", "http://example.test/big.bin")
        reporter.added(a)
        // A second download, never started: the last summary is left for two or more.
        reporter.added(try record("b", "http://example.test/next.bin"))
        reporter.tick([
            a.id: HaulCore.Progress(completed: 6_000_000, total: 20_000_000, bytesPerSecond: 1, connections: 1)
        ])
        a.status = .running // stopped by the shutdown: interrupted, for the next run
        a.segments = [Segment(start: 0, end: 19_999_999, written: 6_000_000)]
        screen.text = ""
        reporter.settled(DownloadOutcome(a))
        reporter.finish()
        #expect(screen.text.contains("stopped at 5.7 MiB"))
        #expect(screen.text.contains("1 stopped, 0 running, 1 queued ]  5.7 MiB"), "\(screen.text)")
    }

    /// `-v`: when a download ends, what it cost on the wire, in one line after its result.
    @Test func verboseTellsRequestsConnectionsAndHandshakes() throws {
        let screen = Screen()
        let reporter = Reporter(mode: .plain, verbose: true, output: { screen.text += $0 }, terminalSize: { (100, 10) })
        var a = try record("a", "https://example.test/big.iso")
        reporter.added(a)
        var transfer = TransferStats()
        for _ in 0..<12 { transfer.requestSent() }
        for connection in 0..<8 {
            transfer.answered(over: [
                ConnectionUse(connection: connection, isFirst: true, tls: true, httpVersion: "HTTP/1.1")
            ])
        }
        for connection in 0..<4 {
            transfer.answered(over: [
                ConnectionUse(connection: connection, isFirst: false, tls: true, httpVersion: "HTTP/1.1")
            ])
        }
        a.status = .completed
        a.fileName = "big.iso"
        reporter.settled(DownloadOutcome(a, transfer: transfer))
        #expect(
            screen.text.contains(
                "saved /tmp/out/big.iso (0 B)\n"
                    + """
                    haul: https://example.test/big.iso: 12 requests over 8 connections (8 TLS handshakes), \
                    HTTP/1.1\n
                    """
            ), "\(screen.text)")

        // One request on a connection another download opened, over HTTP/2; a redirect hop counts.
        var one = TransferStats()
        one.requestSent()
        one.answered(over: [ConnectionUse(connection: 3, isFirst: false, tls: true, httpVersion: "HTTP/2")])
        #expect(Reporter.describe(one) == "1 request over 1 connection (0 TLS handshakes), HTTP/2")
        var plain = TransferStats()
        plain.requestSent()
        plain.requestSent()
        plain.answered(over: [
            ConnectionUse(connection: 1, isFirst: false, tls: false, httpVersion: "HTTP/1.1"),
            ConnectionUse(connection: 2, isFirst: true, tls: false, httpVersion: "HTTP/1.1"),
        ])
        plain.answered(over: [ConnectionUse(connection: 2, isFirst: false, tls: false, httpVersion: "HTTP/1.1")])
        #expect(Reporter.describe(plain) == "3 requests over 2 connections (1 new), HTTP/1.1")

        // Without -v, nothing of it.
        let quiet = Screen()
        let silent = Reporter(mode: .plain, output: { quiet.text += $0 }, terminalSize: { (100, 10) })
        silent.added(a)
        silent.settled(DownloadOutcome(a, transfer: transfer))
        #expect(!quiet.text.contains("requests over"))
    }

    /// `haul ls` shows a download whose URL expired as waiting for a new one, and how to give it.
    @Test func anExpiredDownloadIsListedAsNeedingANewURL() throws {
        var expired = try record("00aa", "http://example.test/model.bin?sig=1")
        expired.status = .failed
        expired.error = HaulError(.urlExpired, "HTTP 403 Forbidden after 10 bytes had arrived")
        let line = DownloadLine.render(DownloadView(expired, live: nil))
        #expect(line.hasPrefix("00aa  needs-url"), "\(line)")
        #expect(line.hasSuffix("-> haul urls 00aa NEW-URL"), "\(line)")
        var failed = expired
        failed.error = HaulError(.httpStatus, "HTTP 404")
        #expect(DownloadLine.render(DownloadView(failed, live: nil)).hasPrefix("00aa  failed"))
    }
}
