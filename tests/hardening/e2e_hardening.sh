#!/usr/bin/env bash
# Issue 15's cases, one check each (the rendezvous store's are Catch2 tests in
# tests/realexec/test_store_hardening.cpp). Every rejection must be exit status 2, exactly one
# stderr line naming the file (and the JSON path where there is one), and no file written.
#
# usage: e2e_hardening.sh REDSIM_BINARY SOURCE_DIR
set -u
redsim=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redsim-hardening.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trace="$src/tests/data/tiny_trace.json"
cluster="$src/tests/data/ideal_star_4.json"
passed=0
failed=0
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
ok() { echo "ok: $1"; passed=$((passed + 1)); }

# mutate IN OUT PYTHON_EXPR: OUT is IN's JSON with the expression applied to it (as d).
mutate() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $3; json.dump(d, open(sys.argv[2], 'w'))" "$1" "$2"; }

# reject NAME EXPECTED_TEXT ARGS...: exit 2, one stderr line containing EXPECTED_TEXT, and
# nothing new in $tmp/out (the outputs go there).
reject() {
  local name=$1 expect=$2
  shift 2
  rm -rf "$tmp/out" && mkdir "$tmp/out"
  "$redsim" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  if [ "$rc" -ne 2 ]; then fail "$name: exit $rc, expected 2: $(head -c 300 "$tmp/stderr")"; return; fi
  if [ "$(wc -l <"$tmp/stderr")" -ne 1 ] || ! grep -qF -- "$expect" "$tmp/stderr"; then
    fail "$name: stderr should be one line with \"$expect\": $(head -c 300 "$tmp/stderr")"; return
  fi
  if [ -n "$(ls -A "$tmp/out")" ]; then fail "$name: wrote $(ls -A "$tmp/out")"; return; fi
  ok "$name: $(cat "$tmp/stderr")"
}

# 1. Code injection through tune --emit-dir: the names land in comments only.
mutate "$trace" "$tmp/evil_trace.json" "d['model'] = \"m\nimport os; os.system('touch PWNED_PY')\n#\ntouch PWNED_SH\n#\r\nx\""
mutate "$cluster" "$tmp/evil_cluster.json" "d['name'] = 'c\ntouch PWNED_CL\n#'"
mutate "$trace" "$tmp/utf7_trace.json" "d['model'] = 'coding: utf-7 +AAo-import os+AAo-os.system(+ACI-touch PWNED_U7+ACI-)+AAo-+ACM-'"
for t in evil_trace utf7_trace; do
  rm -rf "$tmp/emit" "$tmp/sandbox" && mkdir "$tmp/sandbox"
  "$redsim" tune --trace "$tmp/$t.json" --cluster "$tmp/evil_cluster.json" --emit-dir "$tmp/emit" --no-snippets \
    >/dev/null 2>"$tmp/stderr" || { fail "emit $t: tune failed: $(cat "$tmp/stderr")"; continue; }
  if grep -qE '^(import os|os\.|touch|x$)' "$tmp"/emit/*; then fail "emit $t: a line starts with the injected text"; continue; fi
  for env in nccl.env horovod.env; do
    bash -n "$tmp/emit/$env" || fail "emit $t: $env is not valid shell"
    (cd "$tmp/sandbox" && set -a && . "$tmp/emit/$env") >/dev/null 2>&1
  done
  # The bytes as Python reads them (honouring any coding declaration): no import, no call.
  for py in pytorch_ddp.py pytorch_fsdp.py; do
  python3 - "$tmp/emit/$py" <<'EOF' || fail "emit $t: $py imports os or calls os.system"
import ast, sys
tree = ast.parse(open(sys.argv[1], 'rb').read())
bad = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == 'system']
sys.exit(1 if bad else 0)
EOF
  done
  if [ -n "$(ls -A "$tmp/sandbox")" ]; then fail "emit $t: sourcing created $(ls -A "$tmp/sandbox")"; else ok "emit $t: comments only"; fi
done

# 3. The temporary output file: a symlink planted at the old predictable name
# (<out>.tmp.<pid>; exec keeps the subshell's pid) must not redirect the write.
mkdir -p "$tmp/plant" && echo "precious" >"$tmp/victim"
(ln -s "$tmp/victim" "$tmp/plant/r.json.tmp.$BASHPID" && exec "$redsim" simulate --trace "$trace" --cluster "$cluster" \
  --out "$tmp/plant/r.json" >/dev/null)
if [ "$(cat "$tmp/victim")" != "precious" ] || [ -L "$tmp/plant/r.json" ]; then fail "temp file followed a planted symlink"
else ok "temp file: planted symlink not followed"; fi
rm -f "$tmp"/plant/*.tmp.*
[ "$(ls -A "$tmp/plant")" = "r.json" ] && ok "temp file: none left behind" || fail "temp files left: $(ls -A "$tmp/plant")"

# 4. A FIFO as --out is written in place, never replaced by a regular file.
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/from_fifo" &
reader=$!
timeout 20 "$redsim" simulate --trace "$trace" --cluster "$cluster" --out "$tmp/fifo" >/dev/null
wait "$reader"
if [ -p "$tmp/fifo" ] && grep -q '"redsim-result"' "$tmp/from_fifo"; then ok "FIFO output written in place"
else fail "FIFO output: $(ls -l "$tmp/fifo")"; fi

# 5. An output that is an input, or two outputs that are one file.
cp "$trace" "$tmp/t.json" && cp "$cluster" "$tmp/c.json"
reject "out = trace" "--out: expected an output other than the input given to --trace" \
  simulate --trace "$tmp/t.json" --cluster "$tmp/c.json" --out "$tmp/t.json"
reject "timeline = cluster (another spelling)" "--timeline: expected an output other than the input given to --cluster" \
  simulate --trace "$tmp/t.json" --cluster "$tmp/c.json" --timeline "$tmp/out/../c.json"
reject "trace show X --json X" "--json: expected an output other than" trace show "$tmp/t.json" --json "$tmp/t.json"
reject "out = timeline" "--out and --timeline: expected different output files" \
  simulate --trace "$tmp/t.json" --cluster "$tmp/c.json" --out "$tmp/out/r.json" --timeline "$tmp/out/r.json"
cp "$src/tests/data/nccl_tests/superbench-a100_all_reduce_8r.log" "$tmp/ar.log"
reject "calibrate --out = a log" "--out: expected an output other than the input given to --from-nccl-tests" \
  calibrate --from-nccl-tests "$tmp/ar.log" --cluster "$tmp/c.json" --out "$tmp/ar.log"
cmp -s "$trace" "$tmp/t.json" && cmp -s "$cluster" "$tmp/c.json" && ok "inputs intact" || fail "an input was overwritten"
# An output that cannot be written is refused before the work, not after it: tune must not search.
reject "tune --out a directory" "--out: expected a regular file, a character device or a FIFO as output, got a directory" \
  tune --trace "$tmp/t.json" --cluster "$tmp/c.json" --out "$tmp/out"
grep -q "simulations" "$tmp/stderr" && fail "tune searched before refusing its --out"
reject "tune --report in no directory" "--report: cannot write here (directory \"$tmp/none\" is missing" \
  tune --trace "$tmp/t.json" --cluster "$tmp/c.json" --report "$tmp/none/r.svg"
reject "collective --json a directory" "--json: expected a regular file" collective --cluster "$tmp/c.json" --json "$tmp/out"
reject "validate --table in no directory" "--table: cannot write here" validate --trace "$tmp/t.json" \
  --cluster "$tmp/c.json" --measured "$tmp/t.json" --table "$tmp/none/t.txt"
reject "trace show --json in no directory" "--json: cannot write here" trace show "$tmp/t.json" --json "$tmp/none/s.json"
[ -s "$tmp/stdout" ] && fail "trace show printed its summary before refusing its --json"

# 6. Nesting 100,000 deep.
python3 -c "print('{\"a\":' * 100000 + '1' + '}' * 100000)" >"$tmp/deep.json"
reject "nesting 100000 deep" "deep.json: \$.a.a.a" simulate --trace "$tmp/deep.json" --cluster "$cluster" --out "$tmp/out/r.json"

# 7. 1e999, a wrong type in a measured timeline, a 1e300 bandwidth.
sed 's/"optimizer_s": 0.0005/"optimizer_s": 1e999/' "$trace" >"$tmp/huge_number.json"
reject "1e999" "huge_number.json: \$.optimizer_s: expected a number within the range" \
  simulate --trace "$tmp/huge_number.json" --cluster "$cluster" --out "$tmp/out/r.json"
"$redsim" simulate --trace "$trace" --cluster "$cluster" --out "$tmp/sim.json" >/dev/null
mutate "$tmp/sim.json" "$tmp/measured_x.json" "d['measurement'] = {'step_times_s': [0.01]}; d['timeline']['ops'][7]['records'][0]['ready_s'] = 'x'"
reject "measured ready_s = \"x\"" "measured_x.json: \$.timeline.ops[7].records[0].ready_s: expected a number" \
  validate --trace "$trace" --cluster "$cluster" --measured "$tmp/measured_x.json" --out "$tmp/out/v.json"
mutate "$cluster" "$tmp/bw.json" "d['inter_node']['nic_bandwidth_gbps'] = 1e300"
reject "1e300 bandwidth" "bw.json: \$.inter_node.nic_bandwidth_gbps: expected a bandwidth from" \
  simulate --trace "$trace" --cluster "$tmp/bw.json" --out "$tmp/out/r.json"

# 8. Integer overflow. A 2^44-element fp32 tensor is 2^46 bytes: 16 of them make the 2^50-byte
# limit exactly, the 17th ($.params[16]) goes past it.
mutate "$trace" "$tmp/numel.json" "d['params'][0]['numel'] = 2**63 - 2**40"
reject "numel near 2^63" "numel.json: \$.params[0].numel: expected a positive element count at most 2^44" \
  simulate --trace "$tmp/numel.json" --cluster "$cluster" --out "$tmp/out/r.json"
mutate "$trace" "$tmp/many.json" "d['params'] = [dict(p, name=p['name'] + str(i), numel=2**44) for i in range(80) for p in d['params'][:1]]"
reject "model bytes past 2^50" "many.json: \$.params[16].numel: expected a model of at most 2^50 bytes" \
  simulate --trace "$tmp/many.json" --cluster "$cluster" --out "$tmp/out/r.json"
mutate "$trace" "$tmp/batch.json" "d['batch_size_per_rank'] = 2**63 - 1"
reject "batch 2^63-1" "batch.json: \$.batch_size_per_rank: expected a positive integer at most 2^24" \
  simulate --trace "$tmp/batch.json" --cluster "$cluster" --out "$tmp/out/r.json"

# 9. A layer time of 1e308 (SimGrid deadlocked and redsim printed 0.000 ms).
mutate "$trace" "$tmp/slow_layer.json" "d['layers'][1]['backward_s'] = 1e308"
reject "layer time 1e308" "slow_layer.json: \$.layers[1].backward_s: expected a time in seconds from 0 to 3600" \
  simulate --trace "$tmp/slow_layer.json" --cluster "$cluster" --out "$tmp/out/r.json"

# 10. Work bounded before simulating. GPT-2 XL's 6.4 GB of fp32 parameters in 1-byte allgather
# buckets would be 6.4e9 ops.
reject "1-byte allgather buckets" "--max-ops" simulate --trace "$src/traces/gpt2-xl.json" --cluster "$cluster" \
  --strategy zero --allgather-bucket-mb 0.000001 --out "$tmp/out/r.json"
# The tiny plan has 3 forward + 3 backward + 1 optimizer + collectives ops on 4 ranks: > 4 x 7.
reject "--max-ops 20" "over the limit of 20 (--max-ops)" simulate --trace "$trace" --cluster "$cluster" --max-ops 20 \
  --out "$tmp/out/r.json"

# 11. Readers that bypassed the strict reader; duplicate keys.
echo '{"knobs": {"strategy": "bogus"}}' >"$tmp/cfg.json"
reject "--config unknown strategy" "cfg.json: \$.knobs.strategy: expected one of" \
  simulate --trace "$trace" --cluster "$cluster" --config "$tmp/cfg.json" --out "$tmp/out/r.json"
printf '[0.1, \033[31m' >"$tmp/raw.json"
reject "--measured malformed, raw bytes" "raw.json: \$: malformed JSON" \
  validate --trace "$trace" --cluster "$cluster" --measured "$tmp/raw.json" --out "$tmp/out/v.json"
grep -q $'\033' "$tmp/stderr" && fail "raw escape byte echoed to stderr"
echo "[{\"measured\": \"$tmp/raw.json\"}]" >"$tmp/matrix.json"
reject "matrix case error names the matrix and \$[0]" "matrix.json: \$[0]: in this case: $tmp/raw.json: \$: malformed JSON" \
  validate --trace "$trace" --cluster "$cluster" --matrix "$tmp/matrix.json" --out "$tmp/out/v.json"
echo '[{"strategy": "bogus"}]' >"$tmp/matrix2.json"
reject "matrix unknown strategy" "matrix2.json: \$[0].strategy: expected one of" \
  validate --trace "$trace" --cluster "$cluster" --matrix "$tmp/matrix2.json" --out "$tmp/out/v.json"
sed 's/"model": "tiny-mlp",/"model": "tiny-mlp", "model": "again",/' "$trace" >"$tmp/dup.json"
reject "duplicate key" "dup.json: \$.model: duplicate member" simulate --trace "$tmp/dup.json" --cluster "$cluster" \
  --out "$tmp/out/r.json"

# 12. A gzip bomb: 260 MiB of spaces inside a JSON array, about 260 KB compressed.
python3 - "$tmp/bomb.json.gz" <<'EOF'
import gzip, sys
with gzip.open(sys.argv[1], 'wb', compresslevel=6) as f:
    f.write(b'{"traceEvents": [')
    block = b' ' * (1 << 20)
    for _ in range(260):
        f.write(block)
    f.write(b']}')
EOF
reject "gzip bomb" "bomb.json.gz: expected a trace of at most 256 MiB (decompressed)" \
  trace import --kineto "$tmp/bomb.json.gz" --out "$tmp/out/t.json"

# 13. A directory where a file is expected: said, not read as empty (malformed) input.
mkdir -p "$tmp/adir"
reject "directory as trace" "adir: expected a JSON file, got a directory" simulate --trace "$tmp/adir" --cluster "$cluster" \
  --out "$tmp/out/r.json"
reject "directory as profile" "adir: expected a trace file, got a directory" trace import --kineto "$tmp/adir" \
  --out "$tmp/out/t.json"
reject "directory as nccl-tests log" "adir: expected an nccl-tests log, got a directory" calibrate --from-nccl-tests \
  "$tmp/adir" --cluster "$cluster" --out "$tmp/out/c.json"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
