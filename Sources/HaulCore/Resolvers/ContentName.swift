/// A name that says what to fetch rather than where: `hf://`, `oci://` or `s3://`.
public enum ContentName: Sendable, Equatable {
    /// A file, folder or repository on the Hugging Face Hub.
    case hub(HubName)
    /// An image in an OCI registry.
    case image(ImageReference)
    /// An object or a prefix in S3 or a store that speaks its API.
    case s3(S3Name)

    /// The schemes of such names.
    public static let schemes: Set<String> = ["hf", "oci", "s3"]

    /// Parses `text` when its scheme is one of the three (in any case); nil for any other text.
    /// Throws a `.badURL` error naming what is wrong with a name of one of the three.
    public init?(parsing text: String) throws(HaulError) {
        guard let separator = text.firstRange(of: "://") else { return nil }
        let rest = String(text[separator.upperBound...])
        switch text[..<separator.lowerBound].lowercased() {
        case "hf": self = .hub(try HubName(parsing: rest))
        case "oci": self = .image(try ImageReference(parsing: rest))
        case "s3": self = .s3(try S3Name(parsing: rest))
        default: return nil
        }
    }
}
