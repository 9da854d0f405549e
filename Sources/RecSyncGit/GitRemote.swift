import CLibGit2
import CRecSyncNet
import CRecSyncSys
import Foundation

/// Why a network operation failed, with a message for the user that never holds a secret.
public struct GitNetworkError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No connection could be made (name lookup, refused, no route, repository not served).
        case unreachable
        /// Connected, then the transfer failed part-way.
        case interrupted
        /// Credentials were missing or refused.
        case authentication
        /// The server's host key or certificate is not trusted.
        case untrustedHost
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// How the remote answered a non-force push.
public enum GitPushResult: Sendable, Hashable {
    case accepted
    /// The remote did not move the reference (it moved meanwhile, or a hook or permission
    /// refused); the reason as the remote or libgit2 gave it.
    case rejected(String)
    /// Nothing was sent: the remote advertised a reference the caller's `holdOff` check
    /// asked to wait for (a compaction's lease, in recsync); the check's reason.
    case heldOff(String)
    /// Refused, and the remote's advertisement named references with no object (all zeros,
    /// which git sends for a reference it cannot read, such as one with a broken name): the
    /// remote's own repository is damaged, and fails its check of every push. The reason, and
    /// those references as the remote named them.
    case serverDamaged(String, brokenReferences: [String])

    public var isHeldOff: Bool {
        if case .heldOff = self { return true }
        return false
    }
}

/// One reference a push of several moves: the commit it should name on the remote, and the
/// value it must name there now for the update to go ahead (a compare-and-swap).
public struct GitRefUpdate: Sendable, Hashable {
    public let commit: GitOID
    public let remoteRef: String
    /// The value the remote reference must hold; nil: it must not exist yet.
    public let expected: GitOID?

    public init(_ commit: GitOID, to remoteRef: String, expected: GitOID?) {
        self.commit = commit
        self.remoteRef = remoteRef
        self.expected = expected
    }
}

/// How the remote answered one reference of a push of several.
public enum GitRefUpdateResult: Sendable, Hashable {
    case accepted
    /// Not sent: the remote advertised another value than expected for the reference (nil: it
    /// has no such reference). The advertised value, which the caller fetches and builds on.
    case moved(advertised: GitOID?)
    /// The reference was not moved, with the reason: the remote refused it (it moved after
    /// advertising its references, or a hook or permission refused), or it was not sent
    /// because the commit does not descend from the expected value, or because the push
    /// names the reference more than once.
    case rejected(String)
    /// Refused, and the remote's advertisement named references with no object: its own
    /// repository is damaged (see `GitPushResult.serverDamaged`).
    case serverDamaged(String, brokenReferences: [String])
}

/// How the remote answered a push of several references.
public enum GitMultiPushResult: Sendable, Hashable {
    /// The result of each update, in the order the updates were given.
    case pushed([GitRefUpdateResult])
    /// Nothing was sent: the caller's `holdOff` check gave this reason.
    case heldOff(String)
}

extension GitRepository {
    /// Fetches `refspecs` (e.g. `+refs/heads/main:refs/heads/main`) from a remote into this
    /// repository, without tags, FETCH_HEAD or pruning.
    public func fetch(_ refspecs: [String], from remote: GitRemoteURL, options: GitNetworkOptions) throws(GitNetworkError) {
        // The fetched pack is written through libgit2's indexer: default pack windows meanwhile.
        try GitPackWindows.whileWritingPacks { () throws(GitNetworkError) in try fetchUnguarded(refspecs, from: remote, options: options) }
    }

    private func fetchUnguarded(_ refspecs: [String], from remote: GitRemoteURL, options: GitNetworkOptions) throws(GitNetworkError) {
        try withSIGPIPEBlocked { () throws(GitNetworkError) in
            let session = try RemoteSession(repository: self, remote: remote, options: options, direction: GIT_DIRECTION_FETCH, doing: "fetching")
            var fetchOptions = git_fetch_options()
            git_fetch_options_init(&fetchOptions, UInt32(GIT_FETCH_OPTIONS_VERSION))
            fetchOptions.callbacks = session.callbacks()
            fetchOptions.proxy_opts.type = GIT_PROXY_AUTO
            fetchOptions.prune = GIT_FETCH_NO_PRUNE
            fetchOptions.update_fetchhead = 0
            fetchOptions.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE
            let result = withStringArray(refspecs) { array in
                git_remote_fetch(session.pointer, array, &fetchOptions, "recsync: fetch")
            }
            if result < 0 { throw session.failure(result, doing: "fetching", connected: true) }
            session.succeeded()
        }
    }

    /// Pushes `commit` to `remoteRef` without force. A refusal is reported whichever way libgit2
    /// delivers it: `GIT_ENONFASTFORWARD` before anything is sent (the remote's head is not an
    /// ancestor of `commit`), or a status in the `push_update_reference` callback (the remote
    /// moved after advertising its refs, or a hook refused).
    ///
    /// `holdOff` sees the names of the references the remote advertised, once connected and
    /// before anything is built or sent; a reason from it calls the push off (`.heldOff`).
    public func push(
        _ commit: GitOID, to remoteRef: String, at remote: GitRemoteURL, options: GitNetworkOptions,
        holdOff: ((_ advertised: [String]) -> String?)? = nil
    ) throws(GitNetworkError) -> GitPushResult {
        // A push builds a pack (and a local remote indexes it): default pack windows meanwhile.
        try GitPackWindows.whileWritingPacks { () throws(GitNetworkError) -> GitPushResult in
            try pushUnguarded(commit, to: remoteRef, at: remote, options: options, holdOff: holdOff)
        }
    }

    /// Pushes several references in one connection and one pack, each without force and only
    /// over the value its update expects; the result of each update, in their order.
    ///
    /// libgit2 1.5 cannot push atomically, and fails a whole push before sending anything when
    /// one reference is no fast-forward of what the remote advertised. So the advertisement is
    /// read first, and only the updates whose reference is advertised at its expected value
    /// (absent for nil) are sent; the others are `.moved`, with the advertised value. A
    /// reference that moves after the advertisement is refused by the server for itself alone:
    /// libgit2 sends the advertised value as the update's old value, and git's receive-pack
    /// moves the reference only if it still holds that value, checked under the reference's
    /// lock. libgit2's local transport (a `file://` remote) has no such check: it writes each
    /// reference without looking at its value again.
    ///
    /// `holdOff` sees the names of the references the remote advertised, once connected and
    /// before anything is built or sent; a reason from it calls the push off (`.heldOff`).
    public func push(
        _ updates: [GitRefUpdate], at remote: GitRemoteURL, options: GitNetworkOptions, holdOff: ((_ advertised: [String]) -> String?)? = nil
    ) throws(GitNetworkError) -> GitMultiPushResult {
        try GitPackWindows.whileWritingPacks { () throws(GitNetworkError) -> GitMultiPushResult in
            try pushUnguarded(updates, at: remote, options: options, holdOff: holdOff)
        }
    }

    private func pushUnguarded(
        _ updates: [GitRefUpdate], at remote: GitRemoteURL, options: GitNetworkOptions, holdOff: ((_ advertised: [String]) -> String?)?
    ) throws(GitNetworkError) -> GitMultiPushResult {
        try withSIGPIPEBlocked { () throws(GitNetworkError) -> GitMultiPushResult in
            let session = try RemoteSession(repository: self, remote: remote, options: options, direction: GIT_DIRECTION_PUSH, doing: "pushing")
            let advertisement = try session.advertisement()
            if let holdOff, let reason = holdOff(advertisement.map(\.name)) {
                session.succeeded()
                return .heldOff(reason)
            }
            // What is decided before sending; nil for an update that is sent.
            let decided = unsendable(updates, advertisement: advertisement, remote: remote)
            let sent = updates.indices.filter { decided[$0] == nil }
            var refused: [Int: GitRefUpdateResult] = [:]
            if !sent.isEmpty {
                refused = try withPushSources(sent.map { updates[$0].commit }, remote: remote) {
                    sources throws(GitNetworkError) -> [Int: GitRefUpdateResult] in
                    var pushOptions = session.pushOptions()
                    let refspecs = zip(sources, sent).map { source, i in "\(source):\(updates[i].remoteRef)" }
                    let result = withStringArray(refspecs) { array in
                        git_remote_push(session.pointer, array, &pushOptions)
                    }
                    // Not expected once the updates are filtered, but libgit2's own fast-forward
                    // check refuses every reference at once.
                    if result == GIT_ENONFASTFORWARD.rawValue {
                        let reason = session.lastMessage()
                        return Dictionary(uniqueKeysWithValues: sent.map { ($0, GitRefUpdateResult.rejected(reason)) })
                    }
                    if result < 0 { throw session.failure(result, doing: "pushing", connected: true) }
                    let broken = RemoteSession.broken(advertisement)
                    return sent.reduce(into: [:]) { results, i in
                        guard let status = session.state.refusals[updates[i].remoteRef] else { return }
                        let reason = session.scrub(status)
                        results[i] = broken.isEmpty ? .rejected(reason) : .serverDamaged(reason, brokenReferences: broken)
                    }
                }
            }
            session.succeeded()
            return .pushed(updates.indices.map { decided[$0] ?? refused[$0] ?? .accepted })
        }
    }

    /// The result of each update that is not to be sent, decided from the advertisement: its
    /// reference is not at the expected value, its commit does not descend from that value
    /// (which would make libgit2 fail the whole push), or the push names its reference twice.
    private func unsendable(_ updates: [GitRefUpdate], advertisement: [RemoteHead], remote: GitRemoteURL) -> [GitRefUpdateResult?] {
        let heads = Dictionary(advertisement.map { ($0.name, $0.oid) }, uniquingKeysWith: { _, last in last })
        let named = Dictionary(updates.map { ($0.remoteRef, 1) }, uniquingKeysWith: +)
        return updates.map { update -> GitRefUpdateResult? in
            if named[update.remoteRef, default: 0] > 1 {
                return .rejected("\(update.remoteRef) is named more than once in one push to \(remote.redacted)")
            }
            let advertised = heads[update.remoteRef]
            guard advertised == update.expected else { return .moved(advertised: advertised) }
            guard let expected = update.expected else { return nil }
            let descends: Bool
            do throws(GitError) {
                descends = try isDescendantOrEqual(update.commit, of: expected)
            } catch {
                return .rejected("cannot tell whether \(update.commit.hex) descends from \(expected.hex): \(error.message)")
            }
            guard descends else {
                return .rejected(
                    "\(update.commit.hex) does not descend from \(expected.hex), which \(update.remoteRef) holds on \(remote.redacted): no fast-forward"
                )
            }
            return nil
        }
    }

    /// Runs `body` with a temporary local reference naming each of `commits`, and deletes
    /// them all afterwards whatever happens: libgit2 1.5 pushes only from a reference, not
    /// from an object ID.
    private func withPushSources<T>(_ commits: [GitOID], remote: GitRemoteURL, _ body: ([String]) throws(GitNetworkError) -> T)
        throws(GitNetworkError) -> T
    {
        var references: [OpaquePointer?] = []
        defer {
            for reference in references {
                git_reference_delete(reference)
                git_reference_free(reference)
            }
        }
        var names: [String] = []
        for commit in commits {
            let name = "refs/recsync/push-\(UUID().uuidString.lowercased())"
            var target = commit.raw
            var reference: OpaquePointer?
            let created = git_reference_create(&reference, pointer, name, &target, 1, "recsync: push")
            guard created >= 0 else {
                let error = GitError.last("git_reference_create", created)
                throw GitNetworkError(.interrupted, "cannot prepare the push to \(remote.redacted): \(error.message); check that \(path) is writable")
            }
            references.append(reference)
            names.append(name)
        }
        return try body(names)
    }

    /// Deletes references on a remote in one push (`git push URL :ref …`); returns those the
    /// remote advertised and refused to delete (a hook, branch protection). References it
    /// did not advertise are left out: there is nothing to delete.
    public func deleteRemoteReferences(_ remoteRefs: [String], at remote: GitRemoteURL, options: GitNetworkOptions) throws(GitNetworkError)
        -> [String]
    {
        try withSIGPIPEBlocked { () throws(GitNetworkError) -> [String] in
            let session = try RemoteSession(
                repository: self, remote: remote, options: options, direction: GIT_DIRECTION_PUSH, doing: "deleting references")
            let advertised = Set(try session.advertisement().map(\.name))
            let present = remoteRefs.filter { advertised.contains($0) }
            guard !present.isEmpty else { return [] }
            var pushOptions = session.pushOptions()
            let result = withStringArray(present.map { ":\($0)" }) { array in
                git_remote_push(session.pointer, array, &pushOptions)
            }
            if result < 0 { throw session.failure(result, doing: "deleting references", connected: true) }
            session.succeeded()
            return present.filter { session.state.refusals[$0] != nil }
        }
    }

    /// Force-pushes `commit` to `remoteRef`, but only over `expected`: the compare-and-swap of
    /// a history rewrite (`recsync store compact`).
    ///
    /// Guarded twice. Before anything is sent, libgit2's `push_negotiation` callback sees the
    /// value the remote advertised for `remoteRef` and the push is called off unless it is
    /// `expected`. Then libgit2 sends that advertised value as the update's old value, and
    /// the server (git's receive-pack) moves the ref only if it still holds it, checked under
    /// the ref's lock: a push that lands in between makes the remote refuse ours, reported
    /// through `push_update_reference`.
    public func forcePush(_ commit: GitOID, to remoteRef: String, expecting expected: GitOID, at remote: GitRemoteURL, options: GitNetworkOptions)
        throws(GitNetworkError) -> GitPushResult
    {
        try GitPackWindows.whileWritingPacks { () throws(GitNetworkError) -> GitPushResult in
            try pushUnguarded(commit, to: remoteRef, at: remote, options: options, expecting: expected)
        }
    }

    private func pushUnguarded(
        _ commit: GitOID, to remoteRef: String, at remote: GitRemoteURL, options: GitNetworkOptions, expecting expected: GitOID? = nil,
        holdOff: ((_ advertised: [String]) -> String?)? = nil
    ) throws(GitNetworkError) -> GitPushResult {
        try withPushSources([commit], remote: remote) { sources throws(GitNetworkError) -> GitPushResult in
            try withSIGPIPEBlocked { () throws(GitNetworkError) -> GitPushResult in
                let session = try RemoteSession(
                    repository: self, remote: remote, options: options, direction: GIT_DIRECTION_PUSH, doing: "pushing")
                // The advertisement came with the connection: looking at it costs no round trip.
                // Read before pushing: libgit2 lists only what it updated afterwards.
                let advertisement = try session.advertisement()
                if let holdOff, let reason = holdOff(advertisement.map(\.name)) {
                    session.succeeded()
                    return .heldOff(reason)
                }
                var pushOptions = session.pushOptions()
                if let expected {
                    session.state.expectedOld = (remoteRef, expected)
                    pushOptions.callbacks.push_negotiation = pushNegotiationCallback
                }
                let refspec = expected == nil ? "\(sources[0]):\(remoteRef)" : "+\(sources[0]):\(remoteRef)"
                let result = withStringArray([refspec]) { array in
                    git_remote_push(session.pointer, array, &pushOptions)
                }
                if let moved = session.state.guardRefusal { return .rejected(moved) }
                if result == GIT_ENONFASTFORWARD.rawValue {
                    return .rejected(session.lastMessage())
                }
                if result < 0 { throw session.failure(result, doing: "pushing", connected: true) }
                if let status = session.state.refusals[remoteRef] {
                    // A server whose repository holds a broken reference (git ignores a ref with a
                    // broken name, and advertises it with no object) fails its own connectivity
                    // check on every push ("missing necessary objects"): say so.
                    let broken = RemoteSession.broken(advertisement)
                    if !broken.isEmpty { return .serverDamaged(session.scrub(status), brokenReferences: broken) }
                    return .rejected(session.scrub(status))
                }
                session.succeeded()
                return .accepted
            }
        }
    }

    /// The object a reference names on a remote, nil if the remote has no such reference:
    /// `git ls-remote`, a connection and the ref advertisement, no object transfer.
    /// Every reference the remote advertises, in its order (`git ls-remote`).
    public static func remoteReferences(at remote: GitRemoteURL, options: GitNetworkOptions) throws(GitNetworkError) -> [(
        name: String, target: GitOID
    )] {
        _ = LibGit2.ready
        return try withSIGPIPEBlocked { () throws(GitNetworkError) -> [(name: String, target: GitOID)] in
            let session = try RemoteSession(
                repository: nil, remote: remote, options: options, direction: GIT_DIRECTION_FETCH, doing: "listing references")
            let found = try session.advertisement().map { (name: $0.name, target: $0.oid) }
            session.succeeded()
            return found
        }
    }

    public static func remoteReference(_ name: String, at remote: GitRemoteURL, options: GitNetworkOptions) throws(GitNetworkError) -> GitOID? {
        _ = LibGit2.ready
        return try withSIGPIPEBlocked { () throws(GitNetworkError) -> GitOID? in
            let session = try RemoteSession(
                repository: nil, remote: remote, options: options, direction: GIT_DIRECTION_FETCH, doing: "listing references")
            let found = try session.advertisement().last { $0.name == name }?.oid
            session.succeeded()
            return found
        }
    }
}

/// Runs `body` with SIGPIPE blocked on this thread (see `recsync_sigpipe_guard` in CRecSyncSys):
/// a peer that hangs up mid-transfer fails the write with EPIPE, which libgit2 reports.
private func withSIGPIPEBlocked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    var guardState = recsync_sigpipe_guard()
    // Cannot fail: pthread_sigmask fails only for a bad `how`.
    _ = recsync_sigpipe_block(&guardState)
    defer { recsync_sigpipe_restore(&guardState) }
    return try body()
}

/// Calls `body` with a `git_strarray` of `strings`.
private func withStringArray<T>(_ strings: [String], _ body: (UnsafePointer<git_strarray>) -> T) -> T {
    var copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return copies.withUnsafeMutableBufferPointer { buffer in
        var array = git_strarray(strings: buffer.baseAddress, count: buffer.count)
        return body(&array)
    }
}

/// libgit2's TCP connections go through CRecSyncNet's stream, which bounds how long a
/// connection may take and how long it may stay silent (libgit2 1.5 has no such option).
enum NetworkTimeLimits {
    /// Whether the stream is registered (after libgit2 is initialised); once per process.
    static let registered: Bool = {
        _ = LibGit2.ready
        return recsync_net_register() == 0
    }()

    /// Milliseconds for the C side: 0 is no limit, anything else at least 1 ms.
    static func milliseconds(_ seconds: Double) -> Int32 {
        guard seconds > 0 else { return 0 }
        return Int32(clamping: max(1, Int((seconds * 1000).rounded(.up))))
    }

    /// Seconds as a message shows them ("10 s", "0.5 s").
    static func shown(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

/// A reference a remote advertised, and the object it names.
private struct RemoteHead {
    let name: String
    let oid: GitOID
}

/// One connected libgit2 remote (anonymous, or detached without a repository) and the state
/// its callbacks share.
private final class RemoteSession {
    let pointer: OpaquePointer
    let state: RemoteCallbackState
    /// Bounds this session's connections (`recsync_net_watch_begin`); current on this thread
    /// until `deinit`, which runs on it too (libgit2's network calls are synchronous).
    let watch: OpaquePointer

    /// Creates the remote and connects; any failure here means the remote was not reached (or
    /// not trusted, or did not accept our credentials).
    init(repository: GitRepository?, remote: GitRemoteURL, options: GitNetworkOptions, direction: git_direction, doing: String)
        throws(GitNetworkError)
    {
        _ = LibGit2.ready
        guard NetworkTimeLimits.registered else {
            throw GitNetworkError(
                .unreachable,
                """
                cannot reach \(remote.redacted): libgit2 refused recsync's network stream, so connections could\
                 not be bounded in time; report this as a bug
                """
            )
        }
        if remote.transport == .https {
            if let problem = options.certificateAuthoritiesProblem { throw GitNetworkError(.untrustedHost, problem) }
            if let problem = TLSTrust.use(options.certificateAuthorities, for: remote) { throw GitNetworkError(.untrustedHost, problem) }
        }
        var out: OpaquePointer?
        let result: Int32
        if let repository {
            result = git_remote_create_anonymous(&out, repository.pointer, remote.url)
        } else {
            result = git_remote_create_detached(&out, remote.url)
        }
        guard result >= 0, let out else {
            let error = GitError.last("git_remote_create", result)
            throw GitNetworkError(
                .unreachable,
                """
                cannot use \(remote.redacted) as a remote:\
                 \(RemoteCallbackState.scrub(error.message, remote: remote, options: options)); check the URL
                """
            )
        }
        guard
            let watch = recsync_net_watch_begin(
                NetworkTimeLimits.milliseconds(options.connectTimeout), NetworkTimeLimits.milliseconds(options.idleTimeout))
        else {
            git_remote_free(out)
            throw GitNetworkError(.unreachable, "cannot reach \(remote.redacted): out of memory")
        }
        pointer = out
        self.watch = watch
        state = RemoteCallbackState(remote: remote, options: options)
        var callbacks = callbacks()
        var proxy = git_proxy_options()
        git_proxy_options_init(&proxy, UInt32(GIT_PROXY_OPTIONS_VERSION))
        proxy.type = GIT_PROXY_AUTO
        let connected = git_remote_connect(pointer, direction, &callbacks, &proxy, nil)
        if connected < 0 { throw failure(connected, doing: doing, connected: false) }
    }

    deinit {
        git_remote_disconnect(pointer)
        git_remote_free(pointer)
        recsync_net_watch_end(watch)
    }

    /// The references the remote advertised when it was connected, with the object each
    /// names (all zeros for one git cannot read), in the order advertised.
    func advertisement() throws(GitNetworkError) -> [RemoteHead] {
        var heads: UnsafeMutablePointer<UnsafePointer<git_remote_head>?>?
        var count = 0
        let result = git_remote_ls(&heads, &count, pointer)
        if result < 0 { throw failure(result, doing: "listing references", connected: true) }
        return (0..<count).compactMap { i in heads?[i].map { RemoteHead(name: String(cString: $0.pointee.name), oid: GitOID(raw: $0.pointee.oid)) } }
    }

    /// The names of the advertised references that name no object (all zeros, which git
    /// sends for a reference it cannot read, such as one with a broken name), capabilities aside.
    static func broken(_ advertisement: [RemoteHead]) -> [String] {
        advertisement.filter { $0.oid.isZero && $0.name.hasPrefix("refs/") }.map(\.name)
    }

    /// Callbacks whose payload is `state`; valid while this session lives.
    func callbacks() -> git_remote_callbacks {
        var callbacks = git_remote_callbacks()
        git_remote_init_callbacks(&callbacks, UInt32(GIT_REMOTE_CALLBACKS_VERSION))
        callbacks.credentials = credentialsCallback
        callbacks.certificate_check = certificateCallback
        callbacks.push_update_reference = pushUpdateReferenceCallback
        // Progress is not silence: objects indexed, a pack built or sent, the server's messages.
        callbacks.transfer_progress = transferProgressCallback
        callbacks.sideband_progress = sidebandProgressCallback
        callbacks.pack_progress = packProgressCallback
        callbacks.push_transfer_progress = pushTransferProgressCallback
        callbacks.payload = Unmanaged.passUnretained(state).toOpaque()
        return callbacks
    }

    /// Push options with this session's callbacks and the proxy from the environment.
    func pushOptions() -> git_push_options {
        var options = git_push_options()
        git_push_options_init(&options, UInt32(GIT_PUSH_OPTIONS_VERSION))
        options.callbacks = callbacks()
        options.proxy_opts.type = GIT_PROXY_AUTO
        return options
    }

    /// libgit2's last message on this thread, without secrets.
    func lastMessage() -> String {
        var message = "unknown error"
        if let error = git_error_last(), let text = error.pointee.message { message = String(cString: text) }
        return scrub(message)
    }

    func scrub(_ text: String) -> String {
        RemoteCallbackState.scrub(text, remote: state.remote, options: state.options, extra: state.helperCredential?.password.value)
    }

    /// The error for a failed call; read right after it (libgit2's error is thread-local).
    func failure(_ result: Int32, doing: String, connected: Bool) -> GitNetworkError {
        let cause = lastMessage()
        let remote = state.remote.redacted
        if let timeout = timeoutFailure(doing: doing, connected: connected) { return timeout }
        if let problem = state.hostProblem { return GitNetworkError(.untrustedHost, problem) }
        if state.certificateRefused && result == GIT_ECERTIFICATE.rawValue {
            return GitNetworkError(.untrustedHost, state.untrustedCertificate(detail: cause))
        }
        if result == GIT_ECERTIFICATE.rawValue {
            return GitNetworkError(
                .untrustedHost,
                """
                cannot verify the identity of \(remote): \(cause); check the URL, and trust the server's key or\
                 certificate only if you know it is genuine
                """
            )
        }
        // Only a refusal tells git's credential helper to forget what it gave (as git does): a
        // failure of the network says nothing about it, and a retry offers it again.
        if let problem = state.authProblem {
            state.rejectHelperCredential()
            return GitNetworkError(.authentication, problem)
        }
        if result == GIT_EAUTH.rawValue {
            state.rejectHelperCredential()
            return GitNetworkError(.authentication, state.refusedMessage(cause: cause))
        }
        if !connected {
            return GitNetworkError(.unreachable, "cannot reach \(remote): \(cause); check the URL and that the server is running")
        }
        return GitNetworkError(
            .interrupted,
            "the connection to \(remote) failed while \(doing): \(cause); nothing was half-applied (the remote moves its ref atomically), try again")
    }

    /// The operation worked: a credential from a helper is approved so the helper keeps it.
    func succeeded() { state.approveHelperCredential() }

    /// The error for an operation a time limit ended, nil if none did.
    private func timeoutFailure(doing: String, connected: Bool) -> GitNetworkError? {
        let url = state.remote
        let options = state.options
        let endpoint = "\(url.host.contains(":") ? "[\(url.host)]" : url.host) port \(url.effectivePort.map(String.init) ?? "?")"
        switch recsync_net_watch_outcome(watch) {
        case RECSYNC_NET_CONNECT_TIMEOUT:
            return GitNetworkError(
                .unreachable,
                """
                cannot reach \(url.redacted): \(endpoint) did not accept a connection within\
                 \(NetworkTimeLimits.shown(options.connectTimeout)) (the host is down or off the network, or a\
                 firewall drops the connection); check the network and the URL, try again later, or allow longer\
                 with RECSYNC_CONNECT_TIMEOUT
                """
            )
        case RECSYNC_NET_IDLE_TIMEOUT where !connected:
            return GitNetworkError(
                .unreachable,
                """
                cannot reach \(url.redacted): \(endpoint) accepted the connection but sent nothing for\
                 \(NetworkTimeLimits.shown(options.idleTimeout)) (the server is overloaded or hung, or that port\
                 is not a git server); check the URL, try again later, or allow longer with RECSYNC_IDLE_TIMEOUT
                """
            )
        case RECSYNC_NET_IDLE_TIMEOUT:
            return GitNetworkError(
                .interrupted,
                """
                the connection to \(url.redacted) went silent for\
                 \(NetworkTimeLimits.shown(options.idleTimeout)) while \(doing) and was given up; nothing was\
                 half-applied (the remote moves its ref atomically), try again, or allow longer with\
                 RECSYNC_IDLE_TIMEOUT
                """
            )
        default:
            return nil
        }
    }
}

/// What the C callbacks of one remote operation share (through the payload pointer).
private final class RemoteCallbackState {
    enum SSHSource {
        case agent
        case key(privateKey: String, publicKey: String?)
    }

    let remote: GitRemoteURL
    let options: GitNetworkOptions
    private var calls = 0
    private var sshSources: [SSHSource]?
    private var sshTried: [String] = []
    private var httpAttempts = 0
    private(set) var helperCredential: GitCredentialHelper.Credential?
    private var helperDone = false
    /// Set when the credentials callback gave up, with the message for the user.
    private(set) var authProblem: String?
    /// Set when the host key or certificate check refused, with the message for the user.
    var hostProblem: String?
    /// Set when libgit2 refused a TLS certificate and the check left it at that (its error
    /// says why).
    var certificateRefused = false
    /// Per remote reference, the status the remote gave when it refused to update it.
    var refusals: [String: String] = [:]
    /// A guarded force push: the reference and the value it must hold on the remote.
    var expectedOld: (ref: String, oid: GitOID)?
    /// Why the guard called the push off (the remote held another value), if it did.
    var guardRefusal: String?

    /// The `push_negotiation` check of a guarded force push: every update of the guarded
    /// reference must start from the expected value (`update.src` is what the remote
    /// advertised). Non-zero calls the push off before anything is sent.
    func negotiate(_ updates: UnsafeBufferPointer<UnsafePointer<git_push_update>?>) -> Int32 {
        guard let (ref, oid) = expectedOld else { return 0 }
        for case let update? in updates where String(cString: update.pointee.dst_refname) == ref {
            let current = GitOID(raw: update.pointee.src)
            if current != oid {
                guardRefusal = "\(ref) on \(remote.redacted) is at \(current.hex), not at \(oid.hex) as expected: the store moved"
                return GIT_EUSER.rawValue
            }
        }
        return 0
    }

    init(remote: GitRemoteURL, options: GitNetworkOptions) {
        self.remote = remote
        self.options = options
    }

    static func scrub(_ text: String, remote: GitRemoteURL, options: GitNetworkOptions, extra: String? = nil) -> String {
        var result = text
        let secrets = remote.secrets + [options.token?.value, extra].compactMap { $0 }
        for secret in secrets where secret.count >= 3 { result = result.replacingOccurrences(of: secret, with: "***") }
        return result
    }

    // MARK: Credentials

    func credential(_ out: UnsafeMutablePointer<UnsafeMutablePointer<git_credential>?>, urlUser: String?, allowed: UInt32) -> Int32 {
        calls += 1
        // A bounded number of offers per operation: a refused credential is never retried.
        guard calls <= 8 else { return giveUp(refusedMessage(cause: nil)) }
        if allowed & GIT_CREDENTIAL_SSH_KEY.rawValue != 0 {
            return sshKey(out, user: urlUser ?? options.sshUser)
        }
        if allowed & GIT_CREDENTIAL_USERNAME.rawValue != 0 {
            return git_credential_username_new(out, urlUser ?? options.sshUser)
        }
        if allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT.rawValue != 0 {
            return userPassword(out, urlUser: urlUser)
        }
        return giveUp(
            "\(remote.redacted) asks for a kind of credential recsync cannot offer (libgit2 types \(allowed)); use an ssh key or an https token")
    }

    private func sshKey(_ out: UnsafeMutablePointer<UnsafeMutablePointer<git_credential>?>, user: String) -> Int32 {
        if sshSources == nil {
            var sources: [SSHSource] = options.useSSHAgent ? [.agent] : []
            for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
                let key = "\(options.sshDirectory)/\(name)"
                guard FileManager.default.fileExists(atPath: key) else { continue }
                let pub = FileManager.default.fileExists(atPath: key + ".pub") ? key + ".pub" : nil
                sources.append(.key(privateKey: key, publicKey: pub))
            }
            sshSources = sources
        }
        guard let source = sshSources?.first else {
            if sshTried.isEmpty {
                return giveUp(
                    """
                    no ssh key to offer \(remote.redacted): no ssh-agent is running and none of id_ed25519,\
                     id_ecdsa, id_rsa is in \(options.sshDirectory); create one with 'ssh-keygen -t ed25519' and add\
                     the .pub file to the server's authorized keys
                    """
                )
            }
            return giveUp(refusedMessage(cause: nil))
        }
        sshSources?.removeFirst()
        switch source {
        case .agent:
            sshTried.append("ssh-agent")
            return git_credential_ssh_key_from_agent(out, user)
        case .key(let privateKey, let publicKey):
            sshTried.append(privateKey)
            return git_credential_ssh_key_new(out, user, publicKey, privateKey, nil)
        }
    }

    private func userPassword(_ out: UnsafeMutablePointer<UnsafeMutablePointer<git_credential>?>, urlUser: String?) -> Int32 {
        httpAttempts += 1
        guard httpAttempts == 1 else { return giveUp(refusedMessage(cause: nil)) }
        if let token = options.token {
            return git_credential_userpass_plaintext_new(out, urlUser ?? options.tokenUsername, token.value)
        }
        if options.useCredentialHelper, let credential = GitCredentialHelper(options: options).fill(remote) {
            helperCredential = credential
            return git_credential_userpass_plaintext_new(out, credential.username, credential.password.value)
        }
        return giveUp(
            """
            \(remote.redacted) needs credentials and recsync found none; set RECSYNC_TOKEN (and\
             RECSYNC_USERNAME if the server wants a user name), or store them with a git credential helper\
             (git config --global credential.helper store), then try again
            """
        )
    }

    private func giveUp(_ message: String) -> Int32 {
        authProblem = authProblem ?? message
        rejectHelperCredential()
        return GIT_EAUTH.rawValue
    }

    /// The message for credentials the remote refused.
    func refusedMessage(cause: String?) -> String {
        let remote = remote.redacted
        let detail = cause.map { " (\($0))" } ?? ""
        if !sshTried.isEmpty {
            return
                """
                \(remote) refused the ssh keys recsync offered (\(sshTried.joined(separator: ", ")))\(detail);\
                 add your public key to the server's authorized keys, or load the right key into ssh-agent
                """
        }
        if options.token != nil, self.remote.transport == .http || self.remote.transport == .https {
            return
                """
                \(remote) refused the token in RECSYNC_TOKEN\(detail); check the token, its expiry and its\
                 permissions (and RECSYNC_USERNAME if the server wants a particular user name)
                """
        }
        if let helperCredential {
            return
                """
                \(remote) refused the credentials git's credential helper gave for user\
                 '\(helperCredential.username)'\(detail); they were rejected so the helper forgets them: try\
                 again to enter new ones
                """
        }
        return "\(remote) refused the credentials\(detail); check your access to it"
    }

    func approveHelperCredential() {
        // A password given in the address worked: the helpers keep it, since the workspace
        // keeps the address without it (git does the same for a URL's credentials).
        if remote.hasPassword && options.useCredentialHelper && !helperDone {
            helperDone = true
            remote.approveCredentials(options: options)
            return
        }
        guard let helperCredential, !helperDone else { return }
        helperDone = true
        GitCredentialHelper(options: options).approve(helperCredential)
    }

    func rejectHelperCredential() {
        guard let helperCredential, !helperDone else { return }
        helperDone = true
        GitCredentialHelper(options: options).reject(helperCredential)
    }

    // MARK: Host keys and certificates

    /// The check of a TLS certificate. libgit2 verified it already, but cannot match an IP
    /// address (its mbedTLS compares the host with DNS names only): for a host that is an IP
    /// address, a certificate libgit2 refused is verified again here, matching the address
    /// against the certificate's IP addresses. Nothing else libgit2 refused is accepted.
    private func checkX509(_ cert: UnsafeMutablePointer<git_cert>, valid: Bool, host: String) -> Int32 {
        if valid { return 0 }
        let x509 = UnsafeMutableRawPointer(cert).assumingMemoryBound(to: git_cert_x509.self).pointee
        guard let ip = TLSTrust.address(host), let data = x509.data, x509.len > 0 else {
            certificateRefused = true
            return GIT_PASSTHROUGH.rawValue
        }
        switch TLSTrust.verify(certificate: UnsafeRawBufferPointer(start: data, count: x509.len), ip: ip) {
        case .trusted:
            return 0
        case .otherAddress:
            hostProblem =
                """
                the TLS certificate of \(remote.redacted) is signed by a trusted certificate authority but is not issued for\
                 \(host) (it names no such IP address): check the URL; the server's certificate must name the address\
                 you connect to (subjectAltName IP:\(host))
                """
        case .untrusted(let detail):
            hostProblem = untrustedCertificate(detail: detail)
        }
        return GIT_ECERTIFICATE.rawValue
    }

    /// The message for a TLS certificate that is not trusted, with why.
    func untrustedCertificate(detail: String?) -> String {
        let trusted = options.certificateAuthorities.map { " (trusting \($0.origin))" } ?? ""
        // mbedTLS gives one line per finding.
        let detail = detail?.split(whereSeparator: \.isNewline).joined(separator: "; ")
        return
            """
            the TLS certificate of \(remote.redacted) is not trusted\(trusted)\(detail.map { ": \($0)" } ?? ""); check the\
             URL (the certificate must name its host); if the server uses a private certificate authority, point\
             SSL_CERT_FILE (or GIT_SSL_CAINFO) at its PEM certificate, or SSL_CERT_DIR (or GIT_SSL_CAPATH) at a\
             directory of them, or add it to the system's certificates (update-ca-certificates), and try again
            """
    }

    func checkCertificate(_ cert: UnsafeMutablePointer<git_cert>, valid: Bool, host: String) -> Int32 {
        if cert.pointee.cert_type == GIT_CERT_X509 { return checkX509(cert, valid: valid, host: host) }
        guard cert.pointee.cert_type == GIT_CERT_HOSTKEY_LIBSSH2 else {
            certificateRefused = !valid
            return GIT_PASSTHROUGH.rawValue
        }
        let hostkey = UnsafeMutableRawPointer(cert).assumingMemoryBound(to: git_cert_hostkey.self).pointee
        let port = remote.effectivePort ?? 22
        let name = KnownHosts.lookupName(host: host, port: port)
        let files = options.knownHostsFiles.joined(separator: ", ")
        let keyscan = "ssh-keyscan\(port == 22 ? "" : " -p \(port)") \(host) >> \(options.knownHostsFiles.first ?? "~/.ssh/known_hosts")"
        var fingerprint = ""
        if hostkey.type.rawValue & GIT_CERT_SSH_SHA256.rawValue != 0 {
            let digest = withUnsafeBytes(of: hostkey.hash_sha256) { Data($0) }
            fingerprint = " (SHA256:\(digest.base64EncodedString().replacingOccurrences(of: "=", with: "")))"
        }
        guard hostkey.type.rawValue & GIT_CERT_SSH_RAW.rawValue != 0, let raw = hostkey.hostkey, hostkey.hostkey_len > 0 else {
            if valid { return 0 }
            hostProblem =
                "the ssh host key of \(name)\(fingerprint) is not known; if you trust this server, add its key with '\(keyscan)' and try again"
            return GIT_ECERTIFICATE.rawValue
        }
        let key = Array(UnsafeRawBufferPointer(start: raw, count: hostkey.hostkey_len))
        switch KnownHosts.check(files: options.knownHostsFiles, host: host, port: port, key: key) {
        case .match:
            return 0
        case .mismatch(let file, let line):
            hostProblem =
                """
                the ssh host key of \(name)\(fingerprint) does not match the one in \(file) line \(line): the\
                 server was re-keyed, or someone is intercepting the connection. Only if you know the key\
                 changed, remove the old one (ssh-keygen -R '\(name)' -f \(file)) and add the new one\
                 ('\(keyscan)')
                """
            return GIT_ECERTIFICATE.rawValue
        case .revoked(let file, let line):
            hostProblem =
                "the ssh host key of \(name)\(fingerprint) is revoked in \(file) line \(line); ask the server's administrator for its current key"
            return GIT_ECERTIFICATE.rawValue
        case .unknown:
            // libgit2 found it in ~/.ssh/known_hosts itself.
            if valid { return 0 }
            hostProblem =
                """
                the ssh host key of \(name)\(fingerprint) is not known (looked in \(files)); if you trust this\
                 server, add its key with '\(keyscan)' and try again
                """
            return GIT_ECERTIFICATE.rawValue
        }
    }
}

private func state(_ payload: UnsafeMutableRawPointer?) -> RemoteCallbackState? {
    payload.map { Unmanaged<RemoteCallbackState>.fromOpaque($0).takeUnretainedValue() }
}

private let credentialsCallback: git_credential_acquire_cb = { out, _, usernameFromURL, allowed, payload in
    guard let out, let state = state(payload) else { return GIT_EAUTH.rawValue }
    // A credential helper may ask the user: the connection waits for them, not for the network.
    recsync_net_hold()
    defer { recsync_net_release() }
    return state.credential(out, urlUser: usernameFromURL.map { String(cString: $0) }, allowed: allowed)
}

private let transferProgressCallback: git_indexer_progress_cb = { _, _ in
    recsync_net_progress()
    return 0
}

private let sidebandProgressCallback: git_transport_message_cb = { _, _, _ in
    recsync_net_progress()
    return 0
}

private let packProgressCallback: git_packbuilder_progress = { _, _, _, _ in
    recsync_net_progress()
    return 0
}

private let pushTransferProgressCallback: git_push_transfer_progress_cb = { _, _, _, _ in
    recsync_net_progress()
    return 0
}

private let certificateCallback: git_transport_certificate_check_cb = { cert, valid, host, payload in
    guard let cert, let state = state(payload) else { return GIT_ECERTIFICATE.rawValue }
    return state.checkCertificate(cert, valid: valid != 0, host: host.map { String(cString: $0) } ?? "")
}

private let pushUpdateReferenceCallback: git_push_update_reference_cb = { refname, status, payload in
    if let refname, let status, let state = state(payload) {
        state.refusals[String(cString: refname)] = String(cString: status)
    }
    return 0
}

private let pushNegotiationCallback: git_push_negotiation = { updates, count, payload in
    guard let state = state(payload) else { return GIT_EUSER.rawValue }
    guard let updates else { return 0 }
    return state.negotiate(UnsafeBufferPointer(start: updates, count: count))
}
