# slugify TEXT: TEXT as a URL slug, in lower case, its words joined by `-`, nothing else.
# `examples/agent.sh` works on a copy of this file; this one stays as it is, unfinished.

slugify() {
    printf '%s\n' "$1"
}
