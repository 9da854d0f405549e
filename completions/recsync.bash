#!/bin/bash

__recsync_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__recsync_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__recsync_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__recsync_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_recsync() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    store|init|clone|pull|push|status|diff|resolve|log|show|restore|zone|get|put|patch|rm|ls|import|export|changes|share|unshare|keys|config|doctor|subscribe|subscriptions|unsubscribe|watch|notifications|help)
        # Offer subcommand argument completions
        "_recsync_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'store init clone pull push status diff resolve log show restore zone get put patch rm ls import export changes share unshare keys config doctor subscribe subscriptions unsubscribe watch notifications help' -- "${cur}"))
        ;;
    esac
}

_recsync_store() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __recsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    init|doctor|compact|upgrade)
        # Offer subcommand argument completions
        "_recsync_store_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'init doctor compact upgrade' -- "${cur}"))
        ;;
    esac
}

_recsync_store_init() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --user)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--user')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -d
        return
        ;;
    esac
}

_recsync_store_doctor() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --check --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -d
        return
        ;;
    esac
}

_recsync_store_compact() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --drop-tombstones --yes -y --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --before --keep-last --user)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--before')
        return
        ;;
    '--keep-last')
        return
        ;;
    '--user')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -d
        return
        ;;
    esac
}

_recsync_store_upgrade() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --yes -y --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --user)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--user')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -d
        return
        ;;
    esac
}

_recsync_init() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --commit-snapshots --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --remote --user)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--remote')
        __recsync_add_completions -d
        return
        ;;
    '--user')
        return
        ;;
    esac
}

_recsync_clone() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --no-assets --version -h --help)
    repeating_options=(--zone)
    non_repeating_options=(-C --color --user)
    __recsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--user')
        return
        ;;
    '--zone')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -d
        return
        ;;
    2)
        __recsync_add_completions -d
        return
        ;;
    esac
}

_recsync_pull() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --commit --no-commit -n --dry-run --no-assets --wait --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --retry)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--retry')
        return
        ;;
    esac
}

_recsync_push() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --force -n --dry-run --wait --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --retry)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--retry')
        return
        ;;
    esac
}

_recsync_status() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --exit-code --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_diff() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --stat --exit-code --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion diff -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_resolve() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --ours --theirs --merge --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion resolve -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_log() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json -p --patch --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color -n --limit)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '-n'|'--limit')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion log -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_show() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion show -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_restore() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --all --force --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --source)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--source')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion restore -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_zone() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __recsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    create|delete|purge|list|track|untrack)
        # Offer subcommand argument completions
        "_recsync_zone_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'create delete purge list track untrack' -- "${cur}"))
        ;;
    esac
}

_recsync_zone_create() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --encrypted --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --default-type --encrypt)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--default-type')
        return
        ;;
    '--encrypt')
        return
        ;;
    esac
}

_recsync_zone_delete() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --yes -y --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion zone delete -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_zone_purge() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --yes -y --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion zone purge -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_zone_list() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_zone_track() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --all --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion zone track -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_zone_untrack() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --force -f --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion zone untrack -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_get() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --remote --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --asset)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--asset')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion get -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_put() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --type --file)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--type')
        return
        ;;
    '--file')
        __recsync_add_completions -o plusdirs -fX '!*.@(json)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion put -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_patch() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --file)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--file')
        __recsync_add_completions -o plusdirs -fX '!*.@(json)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion patch -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_rm() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --force -f --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion rm -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_ls() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --long -l --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion ls -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_import() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --system --strings --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --format --id --type)
    __recsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--format')
        __recsync_add_completions -W 'jsonl'$'\n''csv'
        return
        ;;
    '--id')
        return
        ;;
    '--type')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion import -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    2)
        __recsync_add_completions -o plusdirs -fX '!*.@(jsonl|ndjson|json|csv)'
        return
        ;;
    esac
}

_recsync_export() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --no-names --system --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --format --id --output -o)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--format')
        __recsync_add_completions -W 'jsonl'$'\n''csv'
        return
        ;;
    '--id')
        return
        ;;
    '--output'|'-o')
        __recsync_add_completions -f
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion export -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_changes() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --store --user --scope --zone --since --limit --desired-keys)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--store')
        __recsync_add_completions -d
        return
        ;;
    '--user')
        return
        ;;
    '--scope')
        __recsync_add_completions -W 'private'$'\n''shared'
        return
        ;;
    '--zone')
        return
        ;;
    '--since')
        return
        ;;
    '--limit')
        return
        ;;
    '--desired-keys')
        return
        ;;
    esac
}

_recsync_share() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --read-only --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --with)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--with')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion share -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_unshare() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --with)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--with')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion unshare -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_keys() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __recsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    init|show|reset|export|import)
        # Offer subcommand argument completions
        "_recsync_keys_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'init show reset export import' -- "${cur}"))
        ;;
    esac
}

_recsync_keys_init() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_keys_show() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_keys_reset() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --yes --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_keys_export() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_keys_import() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --replace --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_config() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __recsync_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    get|set|list)
        # Offer subcommand argument completions
        "_recsync_config_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'get set list' -- "${cur}"))
        ;;
    esac
}

_recsync_config_get() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W 'remote'$'\n''user'$'\n''commitSnapshots'$'\n''noAssetZones'$'\n''trackedZones'
        return
        ;;
    esac
}

_recsync_config_set() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --force --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W 'remote'$'\n''user'$'\n''commitSnapshots'$'\n''noAssetZones'$'\n''trackedZones'
        return
        ;;
    esac
}

_recsync_config_list() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_doctor() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --fix --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_subscribe() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --since-beginning --include-own --version -h --help)
    repeating_options=(--field --equals --exists)
    non_repeating_options=(-C --color --database --zone --query --fires-on --id)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--database')
        __recsync_add_completions -W 'private'$'\n''shared'
        return
        ;;
    '--zone')
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion subscribe -- --zone "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    '--query')
        return
        ;;
    '--field')
        return
        ;;
    '--equals')
        return
        ;;
    '--exists')
        return
        ;;
    '--fires-on')
        __recsync_add_completions -W 'create'$'\n''update'$'\n''delete'$'\n''create,update'$'\n''update,delete'$'\n''create,update,delete'
        return
        ;;
    '--id')
        return
        ;;
    esac
}

_recsync_subscriptions() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_unsubscribe() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __recsync_add_completions -W "$(__recsync_custom_complete ---completion unsubscribe -- positional@0 "${COMP_CWORD}" "$(__recsync_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_recsync_watch() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --pull --once --include-own --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color --exec --settle)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    '--exec')
        return
        ;;
    '--settle')
        return
        ;;
    esac
}

_recsync_notifications() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --verbose -v --json --ack --include-own --version -h --help)
    repeating_options=()
    non_repeating_options=(-C --color)
    __recsync_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '-C')
        __recsync_add_completions -d
        return
        ;;
    '--color')
        __recsync_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_recsync_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __recsync_offer_flags_options -1
}

complete -o filenames -F _recsync recsync
