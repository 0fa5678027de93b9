#!/usr/bin/env bash
# Side-by-side encode/load speed: Prism's tokenizer (go test -bench) and the
# reference transformers.js (node) on the same English prose, paragraph by
# paragraph. Run from the repository root:
#
#   bash engine/tokenizer/testdata/reference/bench.sh [family ...]
#
# Needs node and npm; the reference is installed into Prism's cache by the
# Go test helper if missing. Results depend on machine load: check uptime.
set -euo pipefail
fams=("$@")
[ ${#fams[@]} -gt 0 ] || fams=(qwen3 llama2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PRISM_TOK_PROSE_OUT="$tmp/prose.json" go test ./engine/tokenizer -run 'TestWriteProse' -count=1 >/dev/null
mod=$(PRISM_TOK_PRINT_REF=1 go test ./engine/tokenizer -run 'TestPrintReference' -count=1 -v | sed -n 's/^    .*REFERENCE=//p')
uptime
for fam in "${fams[@]}"; do
  dir=$(PRISM_TOK_PRINT_DIR="$fam" go test ./engine/tokenizer -run 'TestPrintReference' -count=1 -v | sed -n 's/^    .*DIR=//p')
  echo "transformers.js $(node -p "require('$(dirname "$(dirname "$mod")")/package.json').version") $(node engine/tokenizer/testdata/reference/bench.mjs "$mod" "$dir" "$tmp/prose.json")"
done
pat=$(IFS='|'; echo "${fams[*]}")
go test ./engine/tokenizer -run '^$' -bench "EncodeProse/($pat)\$|Load/($pat)\$" -benchtime 20x -count 1 | grep Benchmark
PRISM_TOK_CPU=1 go test ./engine/tokenizer -run 'TestCPUThroughput|TestLoadCPU' -count=1 -v | grep 'CPU'
