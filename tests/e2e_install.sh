#!/usr/bin/env bash
# cmake --install puts everything a user needs under the prefix, and the installed binary runs
# on the installed presets and traces; the bash completion completes subcommands and values.
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$tmp/p" >/dev/null || fail "cmake --install failed"
p=$tmp/p
for f in bin/redsim libexec/redsim/redsim_capture.py libexec/redsim/redsim_profile_ddp.py \
         libexec/redsim/capture_lib/measure.py libexec/redsim/testbed \
         share/redsim/configs/dgx-h100.json share/redsim/configs/cluster.schema.json \
         share/redsim/traces/resnet50.json share/redsim/traces/trace.schema.json \
         share/doc/redsim/README.md share/doc/redsim/LICENSE share/doc/redsim/CHANGELOG.md \
         share/doc/redsim/docs/ARCHITECTURE.md share/bash-completion/completions/redsim; do
  [ -s "$p/$f" ] || fail "$f not installed"
done
[ -x "$p/bin/redsim" ] && [ -x "$p/libexec/redsim/redsim_capture.py" ] && [ -x "$p/libexec/redsim/redsim_profile_ddp.py" ] ||
  fail "programs not executable"
# The installed script finds its modules next to it (--help needs no PyTorch).
/usr/bin/python3 "$p/libexec/redsim/redsim_capture.py" --help >/dev/null || fail "the installed capture script does not run"
/usr/bin/python3 "$p/libexec/redsim/redsim_profile_ddp.py" --help >/dev/null || fail "the installed profile script does not run"
"$p/bin/redsim" simulate --trace "$p/share/redsim/traces/resnet50.json" --cluster "$p/share/redsim/configs/dgx-h100.json" \
  --strategy bucketed >"$tmp/out" || fail "the installed binary does not simulate"
grep -q "step time" "$tmp/out" || fail "no step time printed"
# Completion: subcommands at position 1, a closed set of values after --target.
bash -n "$p/share/bash-completion/completions/redsim" || fail "completion is not valid bash"
got=$(bash -c '. "$1"; COMP_WORDS=(redsim tu); COMP_CWORD=1; _redsim; echo "${COMPREPLY[*]}"' _ "$p/share/bash-completion/completions/redsim")
[ "$got" = tune ] || fail "completing 'redsim tu' gave '$got'"
got=$(bash -c '. "$1"; COMP_WORDS=(redsim tune --target d); COMP_CWORD=3; _redsim; echo "${COMPREPLY[*]}"' _ "$p/share/bash-completion/completions/redsim")
[ "$got" = "ddp deepspeed" ] || fail "completing '--target d' gave '$got'"
# simulate takes --strategy all; run and validate measure one strategy at a time.
got=$(bash -c '. "$1"; COMP_WORDS=(redsim simulate --strategy a); COMP_CWORD=3; _redsim; echo "${COMPREPLY[*]}"' _ "$p/share/bash-completion/completions/redsim")
[ "$got" = "accumulate all" ] || fail "completing 'simulate --strategy a' gave '$got'"
got=$(bash -c '. "$1"; COMP_WORDS=(redsim run --strategy a); COMP_CWORD=3; _redsim; echo "${COMPREPLY[*]}"' _ "$p/share/bash-completion/completions/redsim")
[ "$got" = "accumulate" ] || fail "completing 'run --strategy a' gave '$got'"
echo "1 passed, 0 failed"
