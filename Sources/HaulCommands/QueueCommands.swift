import ArgumentParser
import HaulAPI
import HaulCore
import NIOHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `haul add`: queue downloads in the daemon and print their ids.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Queue URLs in the daemon; prints one id per download.")

    @Argument(help: "http:// or https:// URLs, or s3:// names (one download per object, resolved by the daemon).")
    var urls: [String] = []

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Save into this directory (default: the daemon's).")
    var directory: String?

    @Option(help: "Higher runs first (default 0).")
    var priority: Int?

    @Option(name: .shortAndLong, help: "Read URLs from this file, one per line ('-' for stdin).")
    var inputFile: String?

    @Option(
        name: [.customShort("x"), .customLong("connections")],
        help: ArgumentHelp("Connections per file (1 to 64; default: the daemon's, 'haul serve -x').", valueName: "N"))
    var connections: Int?

    @Option(
        name: .customLong("limit-rate"),
        help: ArgumentHelp(
            "At most RATE bytes per second for each of these downloads (K, M, G suffixes).", valueName: "RATE"))
    var limitRate: String?

    @Flag(help: "Add them paused: nothing is requested until 'haul resume'.")
    var paused = false

    @Flag(
        help: """
            Read them in order, to use each file while it downloads (default: the daemon's, \
            'haul serve --sequential').
            """)
    var sequential = false

    @OptionGroup var daemon: DaemonOptions

    func validate() throws {
        try Limits.validate(connections, in: Limits.connections, option: "-x")
        if let limitRate { _ = try GetCommand.rate(limitRate) }
    }

    /// URLs per request, and bytes of URLs per request: well under the daemon's 1 MiB body
    /// limit even with long signed URLs.
    static let batchSize = 1000
    static let batchBytes = 512 * 1024

    func run() async throws {
        var texts = urls
        if let inputFile { texts += try URLList.read(inputFile) }
        guard !texts.isEmpty else { throw ValidationError("give at least one URL, or -i FILE") }
        // Every URL is checked before the first batch goes out, so a typo on line 9,000 of a
        // list doesn't leave the first 8,000 queued and the rest not.
        // A name of content (`s3://BUCKET/PREFIX/`) is resolved by the daemon, with its own keys:
        // one id per file it stands for.
        for text in texts where try ContentName(parsing: text) == nil { _ = try RemoteURL(text) }
        let directory = directory.map(HaulHome.absolute)
        let rate = try limitRate.map { try GetCommand.rate($0) }
        let client = try daemon.client()
        var start = 0
        while start < texts.count {
            var end = start
            var bytes = 0
            while end < texts.count, end - start < Self.batchSize,
                end == start || bytes + texts[end].utf8.count < Self.batchBytes
            {
                bytes += texts[end].utf8.count + 64
                end += 1
            }
            let adds = texts[start..<end].map {
                var add = AddRequest(
                    url: $0, directory: directory, priority: priority, connections: connections, maxBytesPerSecond: rate
                )
                add.paused = paused ? true : nil
                add.sequential = sequential ? true : nil
                return add
            }
            let added: [DownloadView] = try await client.send(.POST, "/downloads", body: adds)
            for download in added { print(download.id) }
            start = end
        }
    }
}

/// `haul ls`: the daemon's downloads in queue order.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: """
            List the daemon's downloads (removed ones only with --status removed), then any name of content \
            whose finish could not be written.
            """)

    @Option(help: "Only this status: queued, running, paused, completed, failed or removed.")
    var status: String?

    @Flag(help: "Print a JSON array (id, url, status, completedLength, totalLength, path, error, connections, ...).")
    var json = false

    @OptionGroup var daemon: DaemonOptions

    func validate() throws {
        if let status, DownloadStatus(rawValue: status) == nil {
            throw ValidationError("unknown status '\(status)'")
        }
    }

    func run() async throws {
        let query = status.map { "?status=\($0)" } ?? ""
        let client = try daemon.client()
        if json {
            // The daemon's array as it sent it: one line, keys sorted, nothing lost in a round trip.
            try StandardStreams.output(Array(try await client.raw(.GET, "/downloads" + query, body: nil as String?)))
            return
        }
        let downloads: [DownloadView] = try await client.get("/downloads" + query)
        var text = ""
        for download in downloads { text += DownloadLine.render(download) + "\n" }
        // A name of content whose downloads completed but whose finish could not be written.
        let failed: [GroupView] = status == nil ? try await client.get("/groups?state=failed") : []
        for group in failed { text += "finish failed  \(group.name): \(group.error ?? "unknown")\n" }
        try StandardStreams.output(text)
    }
}

/// `haul pause` and `haul resume`: the same shape, one verb apart.
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause downloads (running ones stop at a checkpoint); they stay paused across restarts.")

    @OptionGroup var selection: SelectionOptions
    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let result: CountView = try await daemon.client().send(.POST, "/pause", body: selection.body)
        print("paused \(result.count)")
    }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Resume paused downloads (or retry failed ones, by id).")

    @OptionGroup var selection: SelectionOptions
    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let result: CountView = try await daemon.client().send(.POST, "/resume", body: selection.body)
        print("resumed \(result.count)")
    }
}

struct SelectionOptions: ParsableArguments {
    @Argument(help: "Download ids (see 'haul ls').")
    var ids: [String] = []

    @Flag(help: "Every download.")
    var all = false

    func validate() throws {
        if all == !ids.isEmpty { throw ValidationError("give download ids or --all (not both)") }
    }

    var body: Selection { all ? Selection(all: true) : Selection(ids: ids) }
}

/// `haul rm`: stop and forget downloads; their `.part` files go, finished files stay unless asked.
struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove downloads: stops them and deletes their partial data.")

    @Argument(help: "Download ids (see 'haul ls').")
    var ids: [String]

    @Flag(help: "Also delete the finished file.")
    var deleteFile = false

    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let client = try daemon.client()
        for id in ids {
            let path = "/downloads/\(DaemonClient.pathSegment(id))"
            let _: DownloadView = try await client.send(
                .DELETE, path + (deleteFile ? "?deleteFile=true" : ""), body: nil as String?)
            print("removed \(id)")
        }
    }
}

/// One download as a line of `haul ls` and `haul watch`.
enum DownloadLine {
    static func render(_ download: DownloadView, width: Int = 20) -> String {
        let name = download.fileName ?? download.url
        // A download whose URL expired is shown as waiting for a new one, not as a plain failure.
        let status = download.needsNewURL ? "needs-url" : download.status.rawValue
        var parts = [download.id, status + String(repeating: " ", count: max(0, 9 - status.count))]
        if let total = download.totalLength, total > 0 {
            let fraction = min(1, Double(download.completedLength) / Double(total))
            let filled = Int(fraction * Double(width))
            parts.append(
                "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]")
            parts.append(NumberText.fixed(fraction * 100, places: 0, width: 3) + "%")
            parts.append("\(ByteFormatting.size(download.completedLength))/\(ByteFormatting.size(total))")
        } else {
            parts.append(ByteFormatting.size(download.completedLength))
        }
        if download.status == .running {
            parts.append(ByteFormatting.speed(download.speed))
            // Live connections: "x3" of -x 4 while one is still being opened.
            parts.append("x\(download.connections)")
            if let total = download.totalLength, download.speed > 0 {
                parts.append(
                    "ETA " + ByteFormatting.duration(Double(total - download.completedLength) / download.speed))
            }
        }
        parts.append(name)
        if let host = download.host { parts.append("on \(host)") }
        if let error = download.error { parts.append("(\(error.message))") }
        if download.needsNewURL { parts.append("-> haul urls \(download.id) NEW-URL") }
        return parts.joined(separator: "  ")
    }
}

/// `haul urls ID URL...`: give a daemon's download new URLs; it keeps its bytes when the new
/// first URL serves the same file.
struct URLsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "urls",
        abstract:
            """
            Give a download new URLs (the first its URL, the rest mirrors); it keeps its bytes when they serve \
            the same file.
            """
    )

    @Argument(help: "The download's id (see 'haul ls').")
    var id: String

    @Argument(help: "http:// or https:// URLs.")
    var urls: [String]

    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        for text in urls { _ = try RemoteURL(text) }
        let path = "/downloads/\(DaemonClient.pathSegment(id))/urls"
        let view: DownloadView = try await daemon.client().send(.PUT, path, body: URLsChange(urls: urls))
        print("\(view.id) \(view.status.rawValue) \(urls.count) URL\(urls.count == 1 ? "" : "s")")
    }
}
