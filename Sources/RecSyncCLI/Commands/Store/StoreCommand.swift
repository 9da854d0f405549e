import ArgumentParser

/// `recsync store`: commands on a store itself.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Create, inspect and compact stores.",
        discussion: """
            A store is a bare git repository with one branch, main. It holds recsync.json \
            (format and store ID), zones/OWNER/ZONE/zone.json (a zone's metadata and share \
            participants), zones/OWNER/ZONE/records/ (one git blob per record, CloudKit's record \
            shape), zones/OWNER/ZONE/client-tokens/ (each workspace's last client change token) \
            and tombstones/OWNER/ZONE.json (why a zone went away). Every change is one commit, \
            so 'git log' on a store is its change log.

            EXAMPLES
              recsync store init ~/stores/notes.git
              recsync store doctor ~/stores/notes.git --check
              recsync store compact --keep-last 1000
            """,
        subcommands: [StoreInitCommand.self, StoreDoctorCommand.self, StoreCompactCommand.self, StoreUpgradeCommand.self])
}
