import RecSyncModel

/// The exit status of every `recsync` command, decided here and nowhere else.
public enum ExitCodes {
    public static let success: Int32 = 0
    public static let error: Int32 = 1
    /// A push, pull or resolve left conflicts to settle with `recsync resolve`.
    public static let conflictsPending: Int32 = 2
    public static let notAWorkspace: Int32 = 3
    public static let authenticationFailure: Int32 = 4
    public static let networkUnavailable: Int32 = 5
    /// Bad arguments (swift-argument-parser exits with this itself: EX_USAGE).
    public static let usage: Int32 = 64

    /// The exit status for a library error.
    public static func code(for error: RecSyncError) -> Int32 {
        if case .notAWorkspace = error.reason { return notAWorkspace }
        switch error.code {
        case .notAuthenticated: return authenticationFailure
        case .networkUnavailable, .networkFailure: return networkUnavailable
        default: return self.error
        }
    }

    /// The table shown in `recsync --help` and the man page.
    public static let table = """
        EXIT STATUS
          0   success
          1   error (the message says what to do next)
          2   conflicts pending after a push, pull or resolve ('recsync resolve')
          3   not a workspace ('recsync init', 'recsync clone', or -C DIR)
          4   authentication failure
          5   network unavailable
          64  usage: bad arguments or options
        """
}
