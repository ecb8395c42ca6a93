import HaulCore

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

/// Where Haul keeps its state: `$HAUL_HOME`, else `$XDG_DATA_HOME/haul`, else `~/.local/share/haul`.
enum HaulHome {
    static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let home = environment["HAUL_HOME"], !home.isEmpty { return absolute(home) }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return absolute(data) + "/haul" }
        let user = userHome(environment: environment)
        return absolute(user) + "/.local/share/haul"
    }

    /// `$HOME`, else the home directory the password database gives the user.
    static func userHome(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return "/" }
        return String(cString: directory)
    }

    /// Resolves against the working directory and drops a trailing slash.
    static func absolute(_ path: String) -> String {
        var result = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while result.count > 1, result.hasSuffix("/") { result.removeLast() }
        return Paths.normalized(result)
    }
}
