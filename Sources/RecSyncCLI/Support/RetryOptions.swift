import ArgumentParser
import RecSyncEngine

/// `--retry[=N]` and `--wait`: what `pull` and `push` do when the store cannot be reached.
struct RetryOptions: ParsableArguments {
    @Option(
        name: .customLong("retry"), defaultAsFlag: RetryPolicy.defaultRetries, parsing: .next,
        help: ArgumentHelp(
            """
            When the store cannot be reached, try again up to <n> times (\(RetryPolicy.defaultRetries) for\
             --retry alone), pausing 0.5 s, 1 s, 2 s ... up to 30 s (each varied at random by up to a\
             fifth), with one line on stderr per pause. Conflicts, refused credentials and bad files are\
             never retried.
            """,
            valueName: "n"))
    var retry: Int? = nil

    @Flag(help: "When the store cannot be reached, wait for it: try again, pausing as --retry does, until it answers.")
    var wait = false

    func validate() throws {
        if wait && retry != nil { throw ValidationError("--retry and --wait cannot be used together: --wait already tries until the store answers") }
        if let retry, retry < 0 { throw ValidationError("--retry takes a number of tries from 0 up") }
    }

    /// Whether either was given.
    var given: Bool { wait || retry != nil }

    var policy: RetryPolicy {
        if wait { return .untilReachable }
        return RetryPolicy(retries: retry ?? 0)
    }
}
