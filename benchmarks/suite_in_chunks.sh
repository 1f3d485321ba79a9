#!/usr/bin/env bash
# Run permalloy-bench over a list of cases a few at a time, each chunk in its own
# process with its own JSON report, within a time budget, then merge the reports
# into one table. A long suite run then keeps every finished chunk when it is cut
# short, and a later run can take the cases it did not reach.
#
#   benchmarks/suite_in_chunks.sh OUT_DIR BUDGET_S CHUNK "BENCH FLAGS" CASE...
#
#   benchmarks/suite_in_chunks.sh /tmp/suite 500 3 "--suite models --device cuda --profile" \
#       llama gpt2 bert resnet
#
# No chunk starts once BUDGET_S seconds have passed, and a running chunk is
# stopped 60 s after that. OUT_DIR gets N.json, N.txt (the table) and N.err (the
# progress) per chunk and merged.json / merged.txt; the cases not reached are
# printed last.
set -uo pipefail

out=$1 budget=$2 chunk=$3 flags=$4
shift 4
cases=("$@")
mkdir -p "$out"
start=$(date +%s)
bench=(python3 -m permalloy.tools.bench.cli)
i=0
while [ "$i" -lt "${#cases[@]}" ]; do
  elapsed=$(($(date +%s) - start))
  if [ "$elapsed" -ge "$budget" ]; then
    break
  fi
  names=$(IFS=,; echo "${cases[*]:$i:$chunk}")
  echo "== chunk $i: $names (${elapsed}s elapsed)"
  # shellcheck disable=SC2086 # the flags are words
  timeout $((budget + 60 - elapsed)) "${bench[@]}" $flags --cases "$names" \
    --json "$out/$i.json" >"$out/$i.txt" 2>"$out/$i.err" || echo "chunk $i stopped: exit $?"
  i=$((i + chunk))
done
if [ "$i" -lt "${#cases[@]}" ]; then
  echo "not reached: ${cases[*]:$i}"
fi
reports=$(find "$out" -maxdepth 1 -name '[0-9]*.json' -size +0 -printf '%f\n' | sort -n \
  | sed "s|^|$out/|" | paste -sd, -)
if [ -n "$reports" ]; then
  "${bench[@]}" --merge "$reports" --json "$out/merged.json" >"$out/merged.txt"
  cat "$out/merged.txt"
fi
