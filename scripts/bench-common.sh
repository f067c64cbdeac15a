# Shared by scripts/bench-build and scripts/bench-kustomize: tools, the release binary, the
# generated repository. Sourced, not run.

need_tools() {
  local missing=()
  command -v hyperfine >/dev/null || missing+=(hyperfine)
  [ -x /usr/bin/time ] || missing+=(time)
  command -v python3 >/dev/null || missing+=(python3)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} from Debian" >&2
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
  fi
}

# Sets PLUMB to a release build (or keeps $PLUMB if given).
release_plumb() {
  if [ -z "${PLUMB:-}" ]; then
    cargo build --release -q -p plumb
    PLUMB="${CARGO_TARGET_DIR:-$PWD/target}/release/plumb"
  fi
  KUSTOMIZE_REF="${KUSTOMIZE_REF:-$PWD/../shared/tools/kustomize-ref}"
  if [ ! -x "$KUSTOMIZE_REF" ]; then
    echo "kustomize-ref not found at $KUSTOMIZE_REF (set KUSTOMIZE_REF)" >&2
    exit 2
  fi
  # The first kustomize-ref run fetches its library: keep that out of the timings.
  "$KUSTOMIZE_REF" --help >/dev/null 2>&1 || true
}

# Generates the benchmark repository in $1 with $2 Flux Kustomizations.
generate_repo() {
  python3 scripts/bench-gen-repo "$1" --kustomizations "$2"
}

# mean_ratio JSON: prints "plumb_mean ref_mean ratio" from a hyperfine export with the plumb
# command first.
mean_ratio() {
  python3 - "$1" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
plumb, ref = results[0]["mean"], results[1]["mean"]
print(f"{plumb:.3f} {ref:.3f} {ref / plumb:.1f}")
PY
}
