# Turns swift-argument-parser's generated mdoc into a page that renders without warnings and
# has the hand-written sections (man/sections.mdoc, passed as the variable `sections`):
#   - the EXIT STATUS table of the root command's discussion leaves DESCRIPTION (it becomes the
#     EXIT STATUS section);
#   - a blank line becomes .Pp (mdoc warns about blank lines);
#   - indented lines (the EXAMPLES of a discussion) become a literal display;
#   - the plugin's `.Sh "EXIT STATUS"` / `.Ex -std` is replaced by the sections file;
#   - the global options (-C, --quiet, --verbose, --json, --color, --version, --help) are
#     described once, in OPTIONS, and the commands follow in COMMANDS: the plugin repeats the
#     options under every subcommand, and those entries are dropped there.

# Prints a line of the page; an option list held back is printed first, or not at all when it
# ends at once (a command whose only options were the global ones).
function emit(line) {
    if (held_list != "") {
        if (line == ".El") { held_list = ""; return }
        print held_list
        held_list = ""
    }
    print line
}
function flush_literal() {
    if (in_literal) { emit(".Ed"); in_literal = 0 }
}
# Whether a line starts the entry of a global option.
function is_global(line) {
    return line == ".It Fl C Ar dir" || line == ".It Fl q , -quiet" || line == ".It Fl v , -verbose" || line == ".It Fl -json" \
        || line == ".It Fl -color Ar when" || line == ".It Fl -version" || line == ".It Fl h , -help"
}
BEGIN { skipping_table = 0; in_literal = 0; pending_pp = 0; root = "before"; dropping = 0; held_list = "" }
{
    if ($0 == "EXIT STATUS" && !seen_table) { skipping_table = 1; seen_table = 1; pending_pp = 0; next }
    if (skipping_table) {
        if ($0 ~ /^  [0-9]/) next
        skipping_table = 0
    }
    if ($0 == ".Sh \"EXIT STATUS\"") {
        flush_literal()
        while ((getline line < sections) > 0) { if (line !~ /^\.\\"/) emit(line) }
        dropping_ex = 1
        next
    }
    if (dropping_ex && $0 == ".Ex -std") { dropping_ex = 0; next }

    # The root's option list becomes OPTIONS; the first command's entry ends it and opens COMMANDS.
    if (root == "before" && $0 == ".Bl -tag -width 6n") {
        flush_literal()
        emit(".Sh OPTIONS")
        emit("These go before or after the command; every command takes them.")
        emit($0)
        root = "options"
        pending_pp = 0
        next
    }
    if (root == "options" && $0 == ".Pp") next
    if (root == "options" && $0 ~ /^\.It Em /) {
        emit(".El")
        emit(".Sh COMMANDS")
        emit("Each command takes the options listed with it and the global options (see")
        emit(".Sx OPTIONS ) .")
        emit(".Bl -tag -width 6n")
        root = "commands"
    }
    # Under a command, a global option's entry goes: its .It and the lines up to the next entry.
    if (root == "commands" && dropping) {
        if ($0 ~ /^\.(It|El|Bl)/) dropping = 0
        else next
    }
    if (root == "commands" && is_global($0)) { dropping = 1; next }
    if (root == "commands" && $0 == ".Bl -tag -width 6n") { flush_literal(); pending_pp = 0; held_list = $0; next }

    if ($0 == "") { flush_literal(); pending_pp = 1; next }
    if ($0 ~ /^[ \t]/) {
        if (!in_literal) {
            pending_pp = 0
            emit(".Bd -literal -offset indent")
            in_literal = 1
        }
        sub(/^[ \t]+/, "")
        emit($0)
        next
    }
    flush_literal()
    # A paragraph break only between text lines; before a macro the macro breaks itself.
    if (pending_pp && $0 !~ /^\./) emit(".Pp")
    pending_pp = 0
    emit($0)
}
END { flush_literal() }
