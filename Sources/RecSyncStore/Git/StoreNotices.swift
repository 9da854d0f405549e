import Synchronization

/// What a store did on its own that its user should hear about: for now, a lock file that a
/// killed writer left and a write removed to go on. A command line prints these on stderr;
/// an app may log them. Without a handler they are dropped.
public final class StoreNotices: Sendable {
    private let handler = Mutex<(@Sendable (String) -> Void)?>(nil)

    public init() {}

    /// Sends every later notice to `handler` (replacing any earlier one).
    public func onNotice(_ handler: @escaping @Sendable (String) -> Void) {
        self.handler.withLock { $0 = handler }
    }

    func post(_ message: String) {
        handler.withLock { $0 }?(message)
    }
}
