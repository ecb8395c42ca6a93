import Foundation
import HaulAPI
import HaulCore
import Testing

/// A group's finish that could not be written reaches the event stream (and `haul get --json`)
/// as its own type, naming the group and why, told of the group's leader, which completed.
struct FinishFailedEventTests {
    @Test func aFailedFinishIsAnEventNamingItsGroupAndWhy() throws {
        let leader = DownloadID(rawValue: "0123456789abcdef")
        let event = DownloadEvent(
            id: leader,
            kind: .finishFailed(
                group: GroupID(rawValue: "fedcba9876543210"), name: "oci://registry/app:v1",
                HaulError(.fileSystem, "index.json: is a directory")))
        let view = EventView(event)
        #expect(view.type == .finishFailed)
        #expect(view.status == .completed)
        let json = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(view)) as? [String: Any])
        #expect(json["type"] as? String == "finishFailed")
        #expect(json["id"] as? String == leader.rawValue)
        #expect(json["group"] as? String == "fedcba9876543210")
        #expect(json["name"] as? String == "oci://registry/app:v1")
        #expect((json["error"] as? [String: Any])?["code"] as? String == HaulError.Code.fileSystem.rawValue)
        // Not a final event: the download's own outcome (completed) is told apart.
        #expect(!event.isFinal)
    }
}
