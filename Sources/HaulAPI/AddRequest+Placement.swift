import HaulCore

extension AddRequest {
    /// Paused or not, and where in the waiting list; checked before anything is resolved or added.
    public func placement() throws(HaulError) -> AddPlacement {
        if let position, position < 0 {
            throw HaulError(.usage, "position must be 0 or more (0 is the head of the waiting list), not \(position)")
        }
        return AddPlacement(startsPaused: paused ?? false, index: position)
    }
}

extension AddPlacement {
    /// This placement for each of the `count` downloads one add stands for (one per file of a
    /// name of content): at its index one after the other, as aria2's `addUri` places them.
    public func spread(_ count: Int) -> [AddPlacement] {
        (0..<count).map { offset in AddPlacement(startsPaused: startsPaused, index: index.map { $0 + offset }) }
    }
}
