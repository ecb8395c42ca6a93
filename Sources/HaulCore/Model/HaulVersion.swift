/// Haul's version, reported by `haul --version`, the default user agent (`haul/VERSION`) and
/// aria2's `getVersion`. In HaulCore so the transport (which cannot import HaulAPI) sees it too.
public enum HaulVersion {
    /// The version number (`0.2.0`), as `haul --version` prints it.
    public static let current = "0.2.0"

    /// The `User-Agent` sent unless the user gives another.
    public static var userAgent: String { "haul/\(current)" }
}
