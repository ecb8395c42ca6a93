extension Duration {
    /// The duration in seconds, for arithmetic on monotonic clock readings.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
