import ArgumentParser

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

/// `haul page`: the web page's address with its token, for this user only (`haul serve` does not
/// print the token, since its output may end up in system logs).
struct PageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "page", abstract: "Print the daemon's web page address, token included (keep it private).")

    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let client = try daemon.client()
        print("\(client.baseURL)/#token=\(client.secret)")
    }
}
