#!/bin/sh
# The example project's test, over the copy in the folder named by $1 (default: this folder).
# It prints what the plain runner format of `backstop loop` reads: a `FAILED id - message` line
# per failing check, then a line of counts only.
set -u
dir=${1:-$(dirname "$0")}
. "$dir/slug.sh"

passed=0
failed=0
check() { # id, input, wanted
    got=$(slugify "$2")
    if [ "$got" = "$3" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED slug::$1 - slugify '$2' gave '$got', wanted '$3'"
    fi
}

check keeps_a_plain_word "backstop" "backstop"
check lower_case "Backstop" "backstop"
check joins_words_with_dashes "retry and escalate" "retry-and-escalate"
check drops_punctuation "what now?" "what-now"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
