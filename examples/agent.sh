#!/bin/sh
# A stand-in for a coding agent, for `backstop loop --attempt`: it works on a copy of
# examples/project in the scratch folder $1, and each attempt makes one small change, the fix
# for the first check the last test run failed (read from $BACKSTOP_FAILURE_FILE, which
# `backstop loop` writes). The project's test passes after its fourth attempt.
set -eu
work=${1:?usage: agent.sh SCRATCH_DIR}
project=$(dirname "$0")/project

if [ "${BACKSTOP_ATTEMPT:-1}" = 1 ]; then
    # The first attempt starts from a fresh copy, so the example runs the same way every time.
    rm -rf "$work"
    mkdir -p "$work"
    cp "$project/slug.sh" "$work/slug.sh"
    echo "attempt 1: copied examples/project to $work"
    exit 0
fi

failing=$(sed -n 's/^FAILED slug::\([a-z_]*\) .*/\1/p' "${BACKSTOP_FAILURE_FILE:-/dev/null}" | head -n 1)
case $failing in
    lower_case) stage="tr '[:upper:]' '[:lower:]'" ;;
    joins_words_with_dashes) stage="tr -s ' ' '-'" ;;
    drops_punctuation) stage="tr -cd 'a-z0-9\\\\n-'" ;;
    *) echo "no failing check I know how to fix: '$failing'" >&2; exit 1 ;;
esac
# One more stage on the pipeline that makes the slug.
sed "s/^\(    printf '%s\\\\n' \"\$1\".*\)\$/\1 | $stage/" "$work/slug.sh" > "$work/slug.sh.next"
mv "$work/slug.sh.next" "$work/slug.sh"
echo "attempt ${BACKSTOP_ATTEMPT:-?}: fixed $failing"
