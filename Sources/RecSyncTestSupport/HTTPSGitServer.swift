import Foundation
import Glibc

/// A certificate authority of a test's own, made with `openssl` in a directory, and the
/// server certificates it issues.
public struct TestCertificateAuthority: Sendable {
    /// The authority's certificate (PEM): what a client is told to trust.
    public let certificate: String
    private let key: String
    private let directory: String

    /// The `openssl` the certificates are made with.
    public static let openssl = "/usr/bin/openssl"

    /// Makes the authority's key and self-signed certificate in `directory`.
    public init(directory: String, name: String = "recsync test CA") throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        certificate = "\(directory)/ca.pem"
        key = "\(directory)/ca.key"
        try Self.run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
                "-days", "2", "-subj", "/CN=\(name)", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: directory)
    }

    /// Issues a TLS server certificate named `name` (files `name.pem` and `name.key`) for
    /// `subjectAltNames` (such as `IP:127.0.0.1`, `DNS:localhost`).
    public func issue(_ name: String, subjectAltNames: [String]) throws -> (certificate: String, key: String) {
        let cert = "\(directory)/\(name).pem", serverKey = "\(directory)/\(name).key", request = "\(directory)/\(name).csr"
        let extensions = "\(directory)/\(name).ext"
        try """
        basicConstraints = CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = \(subjectAltNames.joined(separator: ", "))

        """.write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.run(
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", serverKey, "-out", request,
                "-subj", "/CN=\(name)",
            ], in: directory)
        try Self.run(
            [
                "x509", "-req", "-in", request, "-CA", certificate, "-CAkey", key, "-CAcreateserial", "-out", cert, "-days", "2",
                "-extfile", extensions,
            ], in: directory)
        return (cert, serverKey)
    }

    private static func run(_ arguments: [String], in directory: String) throws {
        _ = try Subprocess.run(openssl, arguments, in: directory, environment: ["PATH": "/usr/bin:/bin"])
    }
}

/// nginx serving the git repositories under a directory over https on 127.0.0.1, through
/// fcgiwrap and git's `git-http-backend` (fetch and push), behind basic authentication: a
/// git server as people run them on their own networks.
///
/// Both servers run in the foreground with everything (configuration, logs, temp files, the
/// FastCGI socket) in the test's directory, and are killed with it.
public final class HTTPSGitServer: Sendable {
    public let port: Int
    public let user: String
    public let password: String
    private let nginx: ServerProcess
    private let fcgiwrap: ServerProcess
    private let socket: String

    static let nginxPath = "/usr/sbin/nginx"
    static let fcgiwrapPath = "/usr/sbin/fcgiwrap"

    /// Why this machine cannot run the server (a program missing), nil when it can.
    public static let unavailableReason: String? = {
        let missing = [nginxPath, fcgiwrapPath, TestCertificateAuthority.openssl, "\(gitExecPath)/git-http-backend"].filter {
            !FileManager.default.isExecutableFile(atPath: $0)
        }
        return missing.isEmpty ? nil : "missing \(missing.joined(separator: ", ")) (apt-get install nginx fcgiwrap openssl)"
    }()

    /// git's exec path, where `git-http-backend` is.
    static let gitExecPath: String = {
        let path = try? Subprocess.run("/usr/bin/git", ["--exec-path"], in: "/", environment: GitCLI.hermeticEnvironment)
        return path?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "/usr/lib/git-core"
    }()

    /// Starts serving the repositories under `projectRoot` (pushes allowed) with the
    /// certificate and key given, to `user` with `password` only. `directory` holds the
    /// servers' files.
    public init(projectRoot: String, directory: String, certificate: String, key: String, user: String, password: String) throws {
        if let reason = Self.unavailableReason { throw ServerUnavailable(reason: reason) }
        self.user = user
        self.password = password
        try FileManager.default.createDirectory(atPath: "\(directory)/temp", withIntermediateDirectories: true)
        let hash = try Subprocess.run(
            TestCertificateAuthority.openssl, ["passwd", "-apr1", password], in: directory, environment: ["PATH": "/usr/bin:/bin"])
        try "\(user):\(hash.trimmingCharacters(in: .whitespacesAndNewlines))\n".write(
            toFile: "\(directory)/htpasswd", atomically: true, encoding: .utf8)
        // A socket's path has at most 107 bytes: a test's directory may be longer.
        let socket = "\(NSTemporaryDirectory())/recsync-fcgi-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
        self.socket = socket
        fcgiwrap = try ServerProcess(
            Self.fcgiwrapPath, ["-s", "unix:\(socket)"], log: "\(directory)/fcgiwrap.log", environment: GitCLI.hermeticEnvironment)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline else {
                fcgiwrap.kill()
                throw ServerUnavailable(reason: "fcgiwrap did not make its socket \(socket): \(readLog("\(directory)/fcgiwrap.log"))")
            }
            usleep(20_000)
        }
        port = Loopback.freePort()
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            \(geteuid() == 0 ? "user root root;" : "")
            pid \(directory)/nginx.pid;
            error_log \(directory)/nginx-error.log;
            events { worker_connections 64; }
            http {
                access_log \(directory)/nginx-access.log;
                client_body_temp_path \(directory)/temp/body;
                fastcgi_temp_path \(directory)/temp/fastcgi;
                proxy_temp_path \(directory)/temp/proxy;
                uwsgi_temp_path \(directory)/temp/uwsgi;
                scgi_temp_path \(directory)/temp/scgi;
                client_max_body_size 0;
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(key);
                    location / {
                        auth_basic "recsync test";
                        auth_basic_user_file \(directory)/htpasswd;
                        fastcgi_pass unix:\(socket);
                        fastcgi_param SCRIPT_FILENAME \(Self.gitExecPath)/git-http-backend;
                        fastcgi_param REQUEST_METHOD $request_method;
                        fastcgi_param QUERY_STRING $query_string;
                        fastcgi_param CONTENT_TYPE $content_type;
                        fastcgi_param CONTENT_LENGTH $content_length;
                        fastcgi_param SERVER_PROTOCOL $server_protocol;
                        fastcgi_param REMOTE_ADDR $remote_addr;
                        fastcgi_param REMOTE_USER $remote_user;
                        fastcgi_param PATH_INFO $uri;
                        fastcgi_param GIT_PROJECT_ROOT \(projectRoot);
                        fastcgi_param GIT_HTTP_EXPORT_ALL "";
                        fastcgi_param GIT_CONFIG_NOSYSTEM 1;
                        fastcgi_param GIT_CONFIG_COUNT 1;
                        fastcgi_param GIT_CONFIG_KEY_0 http.receivepack;
                        fastcgi_param GIT_CONFIG_VALUE_0 true;
                    }
                }
            }

            """
        try config.write(toFile: "\(directory)/nginx.conf", atomically: true, encoding: .utf8)
        let log = "\(directory)/nginx.log"
        do {
            nginx = try ServerProcess(
                Self.nginxPath, ["-p", directory, "-e", "\(directory)/nginx-error.log", "-c", "\(directory)/nginx.conf"], log: log,
                environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        } catch {
            fcgiwrap.kill()
            unlink(socket)
            throw error
        }
        do { try Loopback.waitUntilListening(port, what: "nginx", log: "\(directory)/nginx-error.log") } catch {
            nginx.kill()
            fcgiwrap.kill()
            unlink(socket)
            throw error
        }
    }

    /// The https:// address of a repository under the project root, at `host` (an address
    /// the certificate may or may not name).
    public func url(_ repository: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)/\(repository)" }

    deinit {
        nginx.kill()
        fcgiwrap.kill()
        unlink(socket)
    }
}

private func readLog(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
