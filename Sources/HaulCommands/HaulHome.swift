import Foundation

/// Where Haul keeps its state: `$HAUL_HOME`, else `$XDG_DATA_HOME/haul`, else `~/.local/share/haul`.
enum HaulHome {
    static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let home = environment["HAUL_HOME"], !home.isEmpty { return absolute(home) }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return absolute(data) + "/haul" }
        let user = environment["HOME"] ?? NSHomeDirectory()
        return absolute(user) + "/.local/share/haul"
    }

    /// Resolves against the working directory and drops a trailing slash.
    static func absolute(_ path: String) -> String {
        var result = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while result.count > 1, result.hasSuffix("/") { result.removeLast() }
        return (result as NSString).standardizingPath
    }
}
