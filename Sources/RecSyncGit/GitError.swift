import CLibGit2

/// A libgit2 failure, captured at the call site with the function that failed.
public struct GitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The libgit2 function that returned the error.
    public let function: String
    /// libgit2's return code (`git_error_code`), e.g. -3 not found, -15 modified.
    public let code: Int32
    /// libgit2's message for the last error on this thread.
    public let message: String
    /// libgit2's error class (`git_error_t`: 2 OS, 3 invalid, 4 reference, 9 ODB, 11 object, 12 net…),
    /// when libgit2 set one.
    public let errorClass: Int32?

    public init(function: String, code: Int32, message: String, errorClass: Int32? = nil) {
        self.function = function
        self.code = code
        self.message = message
        self.errorClass = errorClass
    }

    /// Reads `git_error_last()` right after a failing call (it is thread-local).
    static func last(_ function: String, _ code: Int32) -> GitError {
        var message = "unknown error"
        var errorClass: Int32?
        if let err = git_error_last(), let text = err.pointee.message {
            message = String(cString: text)
            errorClass = err.pointee.klass
        }
        return GitError(function: function, code: code, message: message, errorClass: errorClass)
    }

    public var isNotFound: Bool { code == GIT_ENOTFOUND.rawValue }
    public var isModified: Bool { code == GIT_EMODIFIED.rawValue }
    public var isExists: Bool { code == GIT_EEXISTS.rawValue }

    public var description: String { "\(function) failed (\(code)): \(message)" }
}

/// Calls a libgit2 function and turns a negative result into a `GitError`.
@inline(__always)
func check(_ function: String, _ result: Int32) throws(GitError) {
    if result < 0 { throw GitError.last(function, result) }
}
