import Foundation
import HaulTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What curl saw for one invocation (headers of the last response when redirects were followed).
struct CurlResponse {
    var exitCode: Int32
    var status: Int
    var headers: [(name: String, value: String)]
    /// Data rather than [UInt8] so failed comparisons print a byte count, not every byte.
    var body: Data
    var stdout: String

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Headers as `name: value` lines, for exact comparisons with readable failures.
    var headerLines: [String] {
        headers.map { "\($0.name): \($0.value)" }
    }
}

/// Runs `curl -s -D headers -o body <arguments> <url>`; URLSession is not dependable on Linux.
/// With `output`, the body goes to that file instead (and `body` is empty).
func curl(_ url: String, _ arguments: [String] = [], output: String? = nil) async throws -> CurlResponse {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("haul-testing-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let headerPath = directory.appendingPathComponent("headers").path
    let bodyPath = output ?? directory.appendingPathComponent("body").path

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "--max-time", "10", "-D", headerPath, "-o", bodyPath] + arguments + [url]
    let standardOutput = Pipe()
    process.standardOutput = standardOutput
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        process.terminationHandler = { _ in continuation.resume() }
        do {
            try process.run()
        } catch {
            continuation.resume(throwing: error)
        }
    }
    let stdout = String(decoding: standardOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let headerText = (try? String(contentsOfFile: headerPath, encoding: .utf8)) ?? ""
    let body = output == nil ? (try? Data(contentsOf: URL(fileURLWithPath: bodyPath))) ?? Data() : Data()

    // The header file holds one block per response; keep the last one.
    let blocks = headerText.components(separatedBy: "\r\n\r\n").filter { $0.hasPrefix("HTTP/") }
    var status = 0
    var headers: [(name: String, value: String)] = []
    if let last = blocks.last {
        let lines = last.components(separatedBy: "\r\n")
        status = Int(lines[0].split(separator: " ")[1]) ?? 0
        for line in lines.dropFirst() where !line.isEmpty {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers.append(
                (String(parts[0]), parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""))
        }
    }
    return CurlResponse(
        exitCode: process.terminationStatus, status: status, headers: headers, body: body, stdout: stdout)
}

extension Payload {
    /// The payload bytes in `range` as Data, to compare with response bodies.
    func data(_ range: Range<Int64>) -> Data {
        Data(bytes(range))
    }
}

/// Sends `request` verbatim over one TCP connection and returns every byte received until the
/// server closes it, to check exactly what went on the wire.
func rawExchange(port: Int, _ request: String) throws -> [UInt8] {
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }

    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw POSIXError(.EPIPE) }
        sent += n
    }

    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 {
            received += chunk[0..<n]
        } else if n == 0 {
            return received
        } else {
            throw POSIXError(.ETIMEDOUT)
        }
    }
}
