import NIOConcurrencyHelpers

/// A value behind a lock that tests can wait on: every access through ``withLockedValue(_:)``
/// wakes the tasks waiting for a condition on it. For what a test's fake records (events, calls,
/// saves) when the test must wait until a given one has happened.
public final class Watched<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>
    private let waiters = Waiters()

    public init(_ value: Value) {
        box = NIOLockedValueBox(value)
    }

    /// The value now.
    public var value: Value {
        box.withLockedValue { $0 }
    }

    /// Reads or changes the value under the lock; the waiters check their conditions after.
    @discardableResult
    public func withLockedValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        defer { waiters.changed() }
        return try box.withLockedValue(body)
    }

    /// Returns once `condition` holds for the value (or the waiting task is cancelled); the
    /// result is whether it holds.
    @discardableResult
    public func wait(until condition: @escaping @Sendable (Value) -> Bool) async -> Bool {
        await waiters.wait { [box] in condition(box.withLockedValue { $0 }) }
    }
}
