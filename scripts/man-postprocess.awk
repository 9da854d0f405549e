# Turns swift-argument-parser's generated mdoc into a page that renders without warnings and
# has the hand-written sections (man/sections.mdoc, passed as the variable `sections`):
#   - the EXIT STATUS table of the root command's discussion leaves DESCRIPTION (it becomes the
#     EXIT STATUS section);
#   - a blank line becomes .Pp (mdoc warns about blank lines);
#   - indented lines (the EXAMPLES of a discussion) become a literal display;
#   - the plugin's `.Sh "EXIT STATUS"` / `.Ex -std` is replaced by the sections file.
function flush_literal() {
    if (in_literal) { print ".Ed"; in_literal = 0 }
}
BEGIN { skipping_table = 0; in_literal = 0; pending_pp = 0 }
{
    if ($0 == "EXIT STATUS" && !seen_table) { skipping_table = 1; seen_table = 1; pending_pp = 0; next }
    if (skipping_table) {
        if ($0 ~ /^  [0-9]/) next
        skipping_table = 0
    }
    if ($0 == ".Sh \"EXIT STATUS\"") {
        flush_literal()
        while ((getline line < sections) > 0) { if (line !~ /^\.\\"/) print line }
        dropping_ex = 1
        next
    }
    if (dropping_ex && $0 == ".Ex -std") { dropping_ex = 0; next }
    if ($0 == "") { flush_literal(); pending_pp = 1; next }
    if ($0 ~ /^[ \t]/) {
        if (!in_literal) {
            pending_pp = 0
            print ".Bd -literal -offset indent"
            in_literal = 1
        }
        sub(/^[ \t]+/, "")
        print
        next
    }
    flush_literal()
    # A paragraph break only between text lines; before a macro the macro breaks itself.
    if (pending_pp && $0 !~ /^\./) print ".Pp"
    pending_pp = 0
    print
}
END { flush_literal() }
