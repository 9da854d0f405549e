import ArgumentParser

/// `recsync config`: the workspace's settings in `.recsync/config`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Read and change the workspace's settings (remote, user, commitSnapshots, noAssetZones, trackedZones).",
        discussion: """
            The settings are kept in .recsync/config: remote (the store: a path, a file:// URL \
            or a network URL; never with a password), user (who the workspace syncs as) and \
            commitSnapshots (true: every pull commits a snapshot) and noAssetZones (zones \
            every pull fetches without their assets' content). trackedZones (the zones a partial \
            workspace holds, null for every zone) is read here and changed by 'recsync zone track' \
            and 'recsync zone untrack'.

            EXAMPLES
              recsync config list
              recsync config get remote
              recsync config set commitSnapshots true
              recsync config set remote /srv/stores/team.git
            """,
        subcommands: [ConfigGetCommand.self, ConfigSetCommand.self, ConfigListCommand.self])
}
