import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `make install`'s copy step (`make install-files`, which `install` runs after its release
/// build) with the built debug binary, and `make uninstall`.
@Suite(.ownThreads) struct InstallTests {
    static let installed = [
        "bin/recsync", "share/man/man1/recsync.1", "share/bash-completion/completions/recsync",
        "share/zsh/site-functions/_recsync", "share/fish/vendor_completions.d/recsync.fish",
    ]
    let dir = TempDirectory("install")

    func make(_ arguments: [String]) throws -> ProcessOutput {
        try Subprocess.capture(
            "/usr/bin/make", ["-C", GeneratedFilesTests.packageRoot] + arguments, in: dir.path,
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "LANG": "C.UTF-8"])
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "make is not installed"))
    func installPutsEachFileWhereItsReaderLooksAndUninstallRemovesOnlyThose() throws {
        let prefix = dir.file("prefix")
        // Another program's files under the prefix, which uninstall must leave.
        try FileManager.default.createDirectory(atPath: "\(prefix)/bin", withIntermediateDirectories: true)
        try writeFile("\(prefix)/bin/other", "#!/bin/sh\n")
        try FileManager.default.createDirectory(atPath: "\(prefix)/share/man/man1", withIntermediateDirectories: true)
        try writeFile("\(prefix)/share/man/man1/other.1", ".Dd\n")

        let install = try make(["install-files", "BIN=\(CLIRunner.builtProduct("recsync"))", "PREFIX=\(prefix)"])
        #expect(install.status == 0, "\(install)")
        for file in Self.installed {
            #expect(FileManager.default.fileExists(atPath: "\(prefix)/\(file)"), "make install-files did not install \(file)")
        }
        #expect(FileManager.default.isExecutableFile(atPath: "\(prefix)/bin/recsync"))
        #expect(readFile("\(prefix)/share/man/man1/recsync.1") == readFile("\(GeneratedFilesTests.packageRoot)/man/recsync.1"))
        let version = try Subprocess.capture("\(prefix)/bin/recsync", ["--version"], in: dir.path, environment: ["PATH": "/usr/bin:/bin"])
        #expect(version.status == 0 && version.stdout.hasPrefix("0."), "\(version)")

        let uninstall = try make(["uninstall", "PREFIX=\(prefix)"])
        #expect(uninstall.status == 0, "\(uninstall)")
        for file in Self.installed {
            #expect(!FileManager.default.fileExists(atPath: "\(prefix)/\(file)"), "make uninstall left \(file)")
        }
        #expect(FileManager.default.fileExists(atPath: "\(prefix)/bin/other"))
        #expect(FileManager.default.fileExists(atPath: "\(prefix)/share/man/man1/other.1"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "make is not installed"))
    func destdirGoesBeforeThePrefix() throws {
        let destdir = dir.file("stage")
        let install = try make(["install-files", "BIN=\(CLIRunner.builtProduct("recsync"))", "PREFIX=/usr", "DESTDIR=\(destdir)"])
        #expect(install.status == 0, "\(install)")
        for file in Self.installed {
            #expect(FileManager.default.fileExists(atPath: "\(destdir)/usr/\(file)"), "DESTDIR: \(file) is not under \(destdir)/usr")
        }
        let uninstall = try make(["uninstall", "PREFIX=/usr", "DESTDIR=\(destdir)"])
        #expect(uninstall.status == 0, "\(uninstall)")
        #expect(!FileManager.default.fileExists(atPath: "\(destdir)/usr/bin/recsync"))
    }
}
