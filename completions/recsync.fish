function __recsync_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __recsync_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __recsync_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __recsync_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __recsync_parse_tokens -S
    set -l unparsed_tokens (__recsync_tokens -pc)
    switch $unparsed_tokens[1]
    case 'recsync'
        __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'store'
            __recsync_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'init'
                __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'user=' 'version' 'h/help'
            case 'doctor'
                __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'check' 'version' 'h/help'
            end
        case 'init'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'remote=' 'user=' 'commit-snapshots' 'version' 'h/help'
        case 'clone'
            __recsync_parse_subcommand 2 'C=' 'q/quiet' 'v/verbose' 'json' 'user=' 'version' 'h/help'
        case 'pull'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'commit' 'no-commit' 'version' 'h/help'
        case 'push'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'force' 'version' 'h/help'
        case 'status'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'exit-code' 'version' 'h/help'
        case 'diff'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        case 'resolve'
            __recsync_parse_subcommand -r 1 'C=' 'q/quiet' 'v/verbose' 'json' 'ours' 'theirs' 'merge' 'version' 'h/help'
        case 'log'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'n/limit=' 'p/patch' 'version' 'h/help'
        case 'show'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        case 'restore'
            __recsync_parse_subcommand -r 1 'C=' 'q/quiet' 'v/verbose' 'json' 'all' 'version' 'h/help'
        case 'zone'
            __recsync_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'create'
                __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'default-type=' 'version' 'h/help'
            case 'delete'
                __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
            case 'purge'
                __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
            case 'list'
                __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
            end
        case 'get'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'remote' 'version' 'h/help'
        case 'put'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'type=' 'file=' 'version' 'h/help'
        case 'rm'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        case 'changes'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'store=' 'user=' 'scope=' 'zone=' 'since=' 'limit=' 'version' 'h/help'
        case 'share'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'with=' 'read-only' 'version' 'h/help'
        case 'unshare'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'with=' 'version' 'h/help'
        case 'subscribe'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'database=' 'zone=' 'query=' 'field=+' 'equals=+' 'exists=+' 'fires-on=' 'id=' 'since-beginning' 'include-own' 'version' 'h/help'
        case 'subscriptions'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        case 'unsubscribe'
            __recsync_parse_subcommand 1 'C=' 'q/quiet' 'v/verbose' 'json' 'version' 'h/help'
        case 'watch'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'exec=' 'pull' 'once' 'include-own' 'settle=' 'version' 'h/help'
        case 'notifications'
            __recsync_parse_subcommand 0 'C=' 'q/quiet' 'v/verbose' 'json' 'ack' 'include-own' 'version' 'h/help'
        case 'help'
            __recsync_parse_subcommand -r 1 'version'
        end
    end
end

function __recsync_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __recsync_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __recsync_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __recsync_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__recsync_tokens -p)
    if test -z "$(__recsync_tokens -t)"
        set -l index (count (__recsync_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'recsync' -f
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'store' -d 'Create and inspect stores.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'init' -d 'Make the current directory a workspace.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'clone' -d 'Make a new workspace of a store and pull everything.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'pull' -d 'Fetch the store\'s changes into the workspace.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'push' -d 'Send new, modified and deleted records (and new zones) to the store.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'status' -d 'Show local changes since the last sync, new zones, conflicts and problems.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'diff' -d 'Show field-level changes of records against their synced versions.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'resolve' -d 'Settle conflicts: keep ours, take theirs, or merge field by field.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'log' -d 'Show the store\'s history: all of it, one zone\'s, or one record\'s.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'show' -d 'Print a record\'s fields (canonical plain JSON) as the store holds them at a revision.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'restore' -d 'Undo local edits or an \'rm\' of records: back to the version last synced.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'zone' -d 'Create, delete, purge and list your zones on the store.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'get' -d 'Print a record\'s fields (canonical plain JSON) from the workspace, or with --remote from the store.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'put' -d 'Write a record\'s fields (a JSON object, from stdin or --file) into the workspace.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'rm' -d 'Delete a record\'s file; \'recsync push\' then deletes it from the store.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'changes' -d 'Print a store\'s change feed from a token, as JSON lines.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'share' -d 'Share one of your zones with another user.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'unshare' -d 'Stop sharing one of your zones with a user.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'subscribe' -d 'Subscribe to changes in a database, a zone, or records of a type.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'subscriptions' -d 'List this workspace\'s subscriptions.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'unsubscribe' -d 'Remove a subscription.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'watch' -d 'Report changes your subscriptions match: those since you last looked, then new ones as they come.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'notifications' -d 'Show what your subscriptions match since their cursors, and exit.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync store" -eq 1' -fa 'init' -d 'Create an empty store (a bare git repository) at PATH.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync store" -eq 1' -fa 'doctor' -d 'Find and remove lock files that killed writers left in a store.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync store init" -eq 1' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" user' -l 'user' -d 'Who creates it (default: $RECSYNC_USER, else your login name).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync store doctor" -eq 1' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" check' -l 'check' -d 'Only report; remove nothing.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync store doctor" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" remote' -l 'remote' -d 'The store to sync with: a path, a file:// URL, or a network URL.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" user' -l 'user' -d 'Who you are on the store (default: $RECSYNC_USER, else your login name).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" commit-snapshots' -l 'commit-snapshots' -d 'Make every pull commit a snapshot into the workspace\'s git repository (also for an existing workspace).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync clone" -eq 1' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync clone" -eq 2' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" user' -l 'user' -d 'Who you are on the store (default: $RECSYNC_USER, else your login name).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync clone" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" commit' -l 'commit' -d 'Commit a snapshot of the workspace (records, sidecars, tokens) into its git repository afterwards (default: the workspace\'s setting, see \'recsync init --commit-snapshots\').'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" no-commit' -l 'no-commit' -d 'Commit a snapshot of the workspace (records, sidecars, tokens) into its git repository afterwards (default: the workspace\'s setting, see \'recsync init --commit-snapshots\').'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync pull" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" force' -l 'force' -d 'Overwrite the store\'s versions instead of reporting conflicts.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync push" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" exit-code' -l 'exit-code' -d 'Exit 2 when conflicts are pending, else 1 when there is something to push or a file that cannot be pushed, else 0 (as \'git diff --exit-code\').'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync diff" -eq 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" ours' -l 'ours' -d 'Keep the record file as it is; the next push overwrites the store\'s version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" theirs' -l 'theirs' -d 'Take the store\'s version (or its deletion).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" merge' -l 'merge' -d 'Field by field: take each side\'s change where only one side changed a field; fields both changed differently stay in conflict.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync resolve" -ge 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync resolve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync log" -eq 1' -F
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" limit n' -s 'n' -l 'limit' -d 'Show at most this many commits.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" p patch' -s 'p' -l 'patch' -d 'For a record: show the fields each version changed.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync log" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync show" -eq 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync restore" -ge 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" all' -l 'all' -d 'Restore every record edited or removed here.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync restore" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone" -eq 1' -fa 'create' -d 'Create one of your zones on the store (then pull, so its directory appears).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone" -eq 1' -fa 'delete' -d 'Delete one of your zones and its records from the store (then pull).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone" -eq 1' -fa 'purge' -d 'Purge one of your zones: delete it so that no workspace uploads it again (then pull).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone" -eq 1' -fa 'list' -d 'List the zones on the store: yours (private) and those shared with you.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" default-type' -l 'default-type' -d 'The type of new records that do not name one (see \'recsync put --type\').' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone create" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone delete" -eq 1' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync zone purge" -eq 1' -fa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone purge" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync zone list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync get" -eq 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" remote' -l 'remote' -d 'Fetch the store\'s current version instead of reading the workspace.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync put" -eq 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" type' -l 'type' -d 'The record type of a new record.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" file' -l 'file' -d 'Read the fields from this file instead of stdin (\'-\' is stdin).' -rfa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync put" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_positional "recsync rm" -eq 1' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync rm" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" store' -l 'store' -d 'The store: a path, a file:// URL, or a network URL.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" user' -l 'user' -d 'Who asks (default: $RECSYNC_USER, else your login name).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" scope' -l 'scope' -d 'The database: private (your zones) or shared (zones shared with you).' -rfka 'private shared'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" zone' -l 'zone' -d 'A zone\'s record feed instead of the database feed (OWNER/ZONE for a shared zone).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" since' -l 'since' -d 'The token from an earlier run (default: from the beginning).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" limit' -l 'limit' -d 'At most this many items, in one page.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync changes" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" with' -l 'with' -d 'The user to share it with.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" read-only' -l 'read-only' -d 'Let them read but not change the zone.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync share" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" with' -l 'with' -d 'The user to stop sharing it with.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unshare" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" database' -l 'database' -d 'Every change in a database: private or shared (with --query: the database to match in).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" zone' -l 'zone' -d 'Every change in one of your zones (or OWNER/ZONE for a shared one); with --query, only that zone.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" query' -l 'query' -d 'Records of this type created, updated or deleted.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe"' -l 'field' -d 'With --query: a field that must equal the --equals at the same position (repeatable).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe"' -l 'equals' -d 'With --field: the value, as plain JSON ("text", 42, true).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe"' -l 'exists' -d 'With --query: a field that must be present (repeatable).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" fires-on' -l 'fires-on' -d 'With --query: which changes fire it, from create,update,delete (default: all three).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" id' -l 'id' -d 'The subscription\'s ID (default: made from what it watches).' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" since-beginning' -l 'since-beginning' -d 'Report everything already in the store once, instead of starting now.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" include-own' -l 'include-own' -d 'Report changes this workspace pushed itself too.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscribe" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync subscriptions" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync unsubscribe" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" exec' -l 'exec' -d 'A shell command to run for each notification.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" pull' -l 'pull' -d 'Pull the whole workspace at start and before each burst\'s notifications.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" once' -l 'once' -d 'Report what is pending since each cursor, deliver it, and exit.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" include-own' -l 'include-own' -d 'Report changes this workspace pushed itself too.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" settle' -l 'settle' -d 'Milliseconds a burst must be quiet before it is reported.' -rfka ''
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" C' -s 'C' -d 'Run as if recsync was started in <dir>.' -rfa '(__recsync_complete_directories)'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" q quiet' -l 'quiet' -s 'q' -d 'Print only errors (and what --json asks for).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" v verbose' -l 'verbose' -s 'v' -d 'Print more detail (records saved, store commits, commit messages).'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" json' -l 'json' -d 'Print one JSON document on stdout (always with "version": 1) instead of text.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" ack' -l 'ack' -d 'Move the cursors past what is shown.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" include-own' -l 'include-own' -d 'Report changes this workspace pushed itself too.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" version' -l 'version' -d 'Show the version.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync notifications" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'recsync' -n '__recsync_should_offer_completions_for_flags_or_options "recsync help" version' -l 'version' -d 'Show the version.'
