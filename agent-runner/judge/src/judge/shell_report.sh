# Judge-owned harness for shell tasks: runs one test of a task's test script and writes
# the report.
#
# Usage: bash shell_report.sh REPORT SCRIPT TEST
#
# The script (mounted pristine) runs as `bash SCRIPT TEST` with its output on a pipe this
# harness holds. The test passed when the script exited 0 and its last line of output is
# its own result line, `ok TEST`. The report gets `passed TEST` or `failed TEST`, then
# `complete <token>`, the token the judge left in REPORT's directory (file `token`), read
# and deleted before the script starts: nothing the script runs can end a report with it.
set -u
report=$1
script=$2
test=$3
token=$(cat -- "${report%/*}/token") && rm -f -- "${report%/*}/token" || exit 3
# The status goes last, after everything the script wrote (its newline included).
output=$(bash -- "$script" "$test" 2>&1 </dev/null; echo "exit=$?")
status=${output##*exit=}
output=${output%exit=*}
output=${output%$'\n'}
last=${output##*$'\n'}
printf '%s\n' "$output" >&2
# Written only now: nothing the script started can hold it open.
if [ "$status" = 0 ] && [ "$last" = "ok $test" ]; then
    printf 'passed %s\ncomplete %s\n' "$test" "$token" >"$report"
else
    printf 'failed %s\ncomplete %s\n' "$test" "$token" >"$report"
fi
