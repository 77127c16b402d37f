# Judge-owned harness for Rust tasks: runs one test of a test executable cargo built (a
# copy the code under test cannot change) and writes the report from libtest's own log.
#
# Usage: bash libtest_report.sh REPORT EXECUTABLE TEST
#
# libtest writes its log (`ok NAME`, `failed NAME`, `ignored NAME`, one line per finished
# test) to a pipe this harness holds (`--logfile /dev/fd/3`), not to a file anyone could
# find and write. The report gets `passed NAME` for each `ok`, `failed NAME` for the rest,
# then `complete <token>`, the token the judge left in REPORT's directory (file `token`),
# read and deleted before the executable starts.
set -u
report=$1
executable=$2
test=$3
token=$(cat -- "${report%/*}/token") && rm -f -- "${report%/*}/token" || exit 3
# Inside $(...), fd 3 becomes the capture pipe and the executable's output goes to stderr.
log=$("$executable" --exact "$test" --test-threads=1 -q --logfile /dev/fd/3 \
    3>&1 1>&2 </dev/null)
lines=
while read -r outcome name; do
    case $outcome in
        ok) lines+="passed $name"$'\n' ;;
        failed|ignored) lines+="failed $name"$'\n' ;;
    esac
done <<<"$log"
printf '%scomplete %s\n' "$lines" "$token" >"$report"
