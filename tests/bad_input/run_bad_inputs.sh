#!/usr/bin/env bash
# Feeds every malformed input listed in expected.tsv to `redsim simulate` and checks that it is
# rejected the way DESIGN.md promises: exit status 2, exactly one line on stderr naming the file
# and the JSON path, and nothing written (no result, no timeline, no temporary file).
#
# usage: run_bad_inputs.sh REDSIM_BINARY GOOD_TRACE GOOD_CLUSTER
#   e.g. tests/bad_input/run_bad_inputs.sh build/cli/redsim tests/data/tiny_trace.json tests/data/ideal_star_4.json
#
# expected.tsv: one line per case, "relative/path<TAB>json path"; a file under cluster/ goes in
# the --cluster slot (with GOOD_TRACE), a file under trace/ in the --trace slot (with GOOD_CLUSTER).
# The message must contain the file path as passed and "<json path>: " (the path followed by the
# separator of "FILE: $.json.path: expected ..."), so "$.nodes" does not match "$.nodes_per_leaf".
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 REDSIM_BINARY GOOD_TRACE GOOD_CLUSTER" >&2
  exit 2
fi
redsim=$1
good_trace=$2
good_cluster=$3
here=$(cd "$(dirname "$0")" && pwd)
table="$here/expected.tsv"

for f in "$good_trace" "$good_cluster" "$table"; do
  if [ ! -r "$f" ]; then
    echo "$0: cannot read $f" >&2
    exit 2
  fi
done
if ! resolved=$(command -v -- "$redsim"); then
  echo "$0: $redsim is not an executable" >&2
  exit 2
fi
redsim=$resolved

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/redsim-bad-inputs.XXXXXX") || exit 2
trap 'rm -rf "$tmpdir"' EXIT

passed=0
failed=0
while IFS=$'\t' read -r rel json_path rest || [ -n "${rel:-}" ]; do
  rel=${rel%$'\r'}
  json_path=${json_path%$'\r'}
  case "$rel" in '' | '#'*) continue ;; esac
  bad="$here/$rel"
  case "$rel" in
    cluster/*) trace=$good_trace; cluster=$bad ;;
    trace/*) trace=$bad; cluster=$good_cluster ;;
    *)
      echo "FAIL $rel: directory is neither cluster/ nor trace/"
      failed=$((failed + 1))
      continue
      ;;
  esac

  # A fresh, empty directory per case: anything left in it afterwards was written by redsim.
  work="$tmpdir/work"
  rm -rf "$work"
  mkdir "$work"
  "$redsim" simulate --trace "$trace" --cluster "$cluster" --strategy bucketed \
    --out "$work/out.json" --timeline "$work/tl.json" >"$tmpdir/stdout" 2>"$tmpdir/stderr" </dev/null
  status=$?

  problems=()
  [ "$status" -eq 2 ] || problems+=("exit status $status, expected 2")
  lines=$(awk 'END { print NR }' "$tmpdir/stderr")
  [ "$lines" -eq 1 ] || problems+=("stderr has $lines lines, expected 1")
  message=$(head -n 1 "$tmpdir/stderr")
  [[ "$message" == *"$bad"* ]] || problems+=("stderr does not name the file")
  [[ "$message" == *"$json_path: "* ]] || problems+=("stderr does not contain the JSON path '$json_path'")
  left=$(ls -A "$work")
  [ -z "$left" ] || problems+=("files were written: ${left//$'\n'/ }")

  if [ ${#problems[@]} -eq 0 ]; then
    echo "ok   $rel: $message"
    passed=$((passed + 1))
  else
    joined=$(printf '%s; ' "${problems[@]}")
    echo "FAIL $rel: ${joined%; } -- stderr: $(head -c 400 "$tmpdir/stderr" | tr '\n' ' ')"
    failed=$((failed + 1))
  fi
done <"$table"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
