// haul-test-server: HaulTesting's fault-injecting HTTP server as a process, for benchmarks.
//
// Serves a deterministic payload at /file on 127.0.0.1, prints its URL as the only line on
// stdout once listening, and runs until SIGTERM/SIGINT or until stdin reaches EOF (so a script
// that keeps a pipe to it open cannot leak it). Note that a shell starts a background job
// (`cmd &`) with stdin on /dev/null unless told otherwise: give it `< some-fifo` or a pipe.

import Dispatch
import HaulTesting
import NIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: haul-test-server --size BYTES [--seed N] [--port P] [--throttle BPS]
                            [--connection-throttles BPS,BPS,...] [--cap N] [--cap-status CODE]
                            [--retry-after S] [--no-etag] [--ignore-range-every N]
                            [--dump PATH] [--log PATH]

    Serves a deterministic payload of BYTES bytes at http://127.0.0.1:PORT/file, prints that URL
    on stdout once listening, and runs until SIGTERM/SIGINT or until stdin reaches EOF.
    Sizes and rates accept a K, M or G suffix (powers of 1024), e.g. --size 1G --throttle 4M.

      --size BYTES                 payload length (required)
      --seed N                     payload seed (default 1)
      --port P                     port to listen on (default 0: any free port)
      --throttle BPS               body bytes per second for every response
      --connection-throttles LIST  the n-th connection gets LIST[n % count] bytes per second
      --cap N                      refuse requests while N bodies are being streamed
      --cap-status CODE            status for refused requests (default 503; e.g. 429)
      --retry-after S              send Retry-After: S with refusals
      --no-etag                    send no ETag
      --ignore-range-every N       answer every N-th request (the N-th, the 2N-th, ...) with 200
                                   and the whole body, whatever its Range says (of the first
                                   65536 requests; the rest are answered as asked)
      --dump PATH                  write the payload to PATH before serving (to cmp downloads)
      --log PATH                   on exit, write every response to PATH, one tab-separated line
                                   each: status, connection number, first and last payload byte
                                   ("-" for none), body bytes sent
    """

struct Options {
    var size: Int64?
    var seed: UInt64 = 1
    var port = 0
    var throttle: Int?
    var connectionThrottles: [Int]?
    var cap: Int?
    var capStatus: Int?
    var retryAfter: String?
    var etag = true
    var ignoreRangeEvery: Int?
    var dump: String?
    var log: String?
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    let line = Array("haul-test-server: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(code)
}

/// A non-negative integer with an optional K/M/G (binary) suffix.
func quantity(_ text: String) -> Int64? {
    var digits = Substring(text)
    var multiplier: Int64 = 1
    switch digits.last {
    case "k", "K": multiplier = 1 << 10
    case "m", "M": multiplier = 1 << 20
    case "g", "G": multiplier = 1 << 30
    default: break
    }
    if multiplier != 1 {
        digits = digits.dropLast()
    }
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits) else {
        return nil
    }
    let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
    return overflow ? nil : product
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var index = 0
    func value(_ name: String, inline: String?) -> String {
        if let inline {
            return inline
        }
        index += 1
        guard index < arguments.count else { fail("\(name) needs a value") }
        return arguments[index]
    }
    func rate(_ name: String, _ text: String) -> Int {
        guard let bps = quantity(text), bps > 0, let result = Int(exactly: bps) else {
            fail("\(name) needs a positive number of bytes per second, got '\(text)'")
        }
        return result
    }
    /// The option's value as an integer in `range`; else `fail` with "NAME needs WHAT, got '...'".
    func integer(_ name: String, inline: String?, in range: ClosedRange<Int>, _ what: String) -> Int {
        let text = value(name, inline: inline)
        guard let number = Int(text), range.contains(number) else { fail("\(name) needs \(what), got '\(text)'") }
        return number
    }
    while index < arguments.count {
        let argument = arguments[index]
        var name = argument
        var inline: String?
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            name = String(argument[..<equals])
            inline = String(argument[argument.index(after: equals)...])
        }
        switch name {
        case "-h", "--help":
            print(usage)
            exit(0)
        case "--size":
            let text = value(name, inline: inline)
            guard let size = quantity(text) else { fail("--size needs a number of bytes, got '\(text)'") }
            options.size = size
        case "--seed":
            let text = value(name, inline: inline)
            guard let seed = UInt64(text) else { fail("--seed needs a non-negative integer, got '\(text)'") }
            options.seed = seed
        case "--port":
            options.port = integer(name, inline: inline, in: 0...65535, "a port number (0-65535)")
        case "--throttle":
            options.throttle = rate(name, value(name, inline: inline))
        case "--connection-throttles":
            let text = value(name, inline: inline)
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !text.isEmpty else { fail("--connection-throttles needs a comma-separated list of rates") }
            options.connectionThrottles = parts.map { rate(name, $0) }
        case "--cap":
            options.cap = integer(name, inline: inline, in: 1...Int.max, "a positive integer")
        case "--cap-status":
            options.capStatus = integer(name, inline: inline, in: 400...599, "an error status (400-599)")
        case "--retry-after":
            let text = value(name, inline: inline)
            guard !text.isEmpty, !text.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                fail("--retry-after needs a header value, got '\(text)'")
            }
            options.retryAfter = text
        case "--no-etag":
            guard inline == nil else { fail("--no-etag takes no value") }
            options.etag = false
        case "--ignore-range-every":
            options.ignoreRangeEvery = integer(name, inline: inline, in: 1...Int.max, "a positive integer")
        case "--dump":
            let path = value(name, inline: inline)
            guard !path.isEmpty else { fail("--dump needs a path") }
            options.dump = path
        case "--log":
            let path = value(name, inline: inline)
            guard !path.isEmpty else { fail("--log needs a path") }
            options.log = path
        default:
            fail("unknown argument '\(argument)' (see --help)")
        }
        index += 1
    }
    if options.size == nil {
        fail("--size is required (see --help)")
    }
    if options.cap == nil && (options.capStatus != nil || options.retryAfter != nil) {
        fail("--cap-status and --retry-after need --cap")
    }
    return options
}

/// Writes the whole payload to `path` in 1 MiB blocks.
func dump(_ payload: Payload, to path: String) {
    guard let file = fopen(path, "wb") else {
        fail("cannot create \(path): \(String(cString: strerror(errno)))", code: 1)
    }
    let block: Int64 = 1 << 20
    var buffer = ByteBufferAllocator().buffer(capacity: Int(block))
    var offset: Int64 = 0
    while offset < payload.length {
        let end = min(payload.length, offset + block)
        buffer.clear()
        payload.write(offset..<end, into: &buffer)
        let written = buffer.withUnsafeReadableBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == buffer.readableBytes else {
            fail("cannot write \(path): \(String(cString: strerror(errno)))", code: 1)
        }
        offset = end
    }
    guard fclose(file) == 0 else {
        fail("cannot write \(path): \(String(cString: strerror(errno)))", code: 1)
    }
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
let payload = Payload(seed: options.seed, length: options.size!)
if let path = options.dump {
    dump(payload, to: path)
}

signal(SIGPIPE, SIG_IGN)
let server: TestServer
do {
    server = try await TestServer.start(host: "127.0.0.1", port: options.port)
} catch {
    fail("cannot listen on 127.0.0.1:\(options.port): \(error)", code: 1)
}
server.setRoute(
    "/file",
    Route(
        payload: payload,
        etag: options.etag ? Route.defaultETag(for: payload) : nil,
        throttle: options.throttle,
        script: options.ignoreRangeEvery.map { every in
            (1...65536).map { $0 % every == 0 ? Fault.ignoreRange : Fault.none }
        } ?? [],
        connectionCap: options.cap.map {
            ConnectionCap(limit: $0, status: options.capStatus ?? 503, retryAfter: options.retryAfter)
        },
        connectionThrottles: options.connectionThrottles
    )
)

// Stop on SIGTERM, SIGINT or EOF on stdin, whichever comes first.
let (stops, stop) = AsyncStream<String>.makeStream()
// (Free functions, not top-level closures: those would be main-actor isolated, and Dispatch
// calls them on its own threads.)
func watch(signal number: Int32, _ stop: AsyncStream<String>.Continuation) -> any DispatchSourceSignal {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { @Sendable in stop.yield("signal \(number)") }
    source.resume()
    return source
}

func watchStandardInput(_ stop: AsyncStream<String>.Continuation) {
    DispatchQueue.global().async { @Sendable in
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count == 0 || (count < 0 && errno != EINTR) {
                stop.yield("end of stdin")
                return
            }
        }
    }
}

let signalSources = [watch(signal: SIGTERM, stop), watch(signal: SIGINT, stop)]
watchStandardInput(stop)

print(server.url("/file"))
fflush(nil) // stdout, flushed now: the reader waits for this line

for await _ in stops {
    break
}
withExtendedLifetime(signalSources) {}
try? await server.shutdown() // the tool exits next: nothing is left to lose
if let path = options.log {
    // After the shutdown: every connection is closed, so every count is final.
    let lines = server.responses.map { response in
        let range = response.range.map { "\($0.lowerBound)\t\($0.upperBound - 1)" } ?? "-\t-"
        return "\(response.status)\t\(response.connection)\t\(range)\t\(response.bodyBytesSent)\n"
    }
    guard let file = fopen(path, "w"), fputs(lines.joined(), file) >= 0, fclose(file) == 0 else {
        fail("cannot write \(path): \(String(cString: strerror(errno)))", code: 1)
    }
}
exit(0)
