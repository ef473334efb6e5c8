#!/usr/bin/env bash
# `make test`: every part of the suite runs, every time, whichever part fails; the last lines
# give each part's counts, then the total, and the exit code is non-zero if any part failed.
#
# The parts, in the order they run:
#   - beside everything, in the background: the late-night alert test and the stopped-serve
#     test, side by side (each waits minutes for a deadline on the wall clock), and one Prefect
#     server start whose home the end-to-end tests' homes start as copies of
#     (tests/e2e/prefect_processes.py: HOME_TEMPLATE);
#   - lint (ruff check, ruff format --check) and types (mypy --strict);
#   - the unit suite;
#   - the browser tests (marker `browser`: the desk in Debian's chromium, tests/desk), after the
#     suite so the browser has the CPU; chromium is installed here when running as root and
#     missing (as faketime is for --any-day). In CI (CI=true) they always run; elsewhere,
#     without chromium, one line says they did not run and how to run them;
#   - the end-to-end tests (a real Prefect server each, on the real clock), after the suite
#     because Prefect's temporary server (SQLite) times out when it fights the parallel suite
#     for the CPU. They run a file at a time on each of two workers (E2E_WORKERS=3 saves ~2.5 min,
#     but the inbox-latency target of test_prefect_scheduling then missed once: 13 s), longest first
#     (tests/e2e/conftest.py).
# Both pytest runs keep xdist's files in the order collected (`--no-loadscope-reorder`): slow
# files first (tests/conftest.py).
#
# `tests/make_test.sh --any-day` (`make any-day`; .ci/run runs it after `make test`) is the
# proof that no test depends on today's date: the unit suite a year ahead and a year back under
# Debian's faketime (installed here when running as root, as CI does, and missing). Each test
# module's clock starts at a fixed instant anyway (tests/conftest.py); faketime moves what the
# tests cannot set: the process's own clock, DuckDB's, OpenSSL's.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
WAITS=(tests/e2e/test_deadline_alert.py tests/e2e/test_stopped_serve.py)
E2E_HOME=.pytest_cache/e2e-prefect-home
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

parts=()
declare -A status counts

# run NAME COMMAND...: run one part, keep its output's last pytest line (or "ok"/"failed")
run() {
  local name=$1
  shift
  echo
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  parts+=("$name")
  status[$name]=$rc
  counts[$name]=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$logs/$name.log" | tail -n 1 |
    sed -E 's/^=+ //; s/ =+$//')
}

suite=("$BIN/pytest" -n 2 --dist loadfile --no-loadscope-reorder -m "not e2e and not browser" --durations=5 -p no:cacheprovider)
CHROMIUM=/usr/bin/chromium

if [ "${1:-}" = "--any-day" ]; then
  # faketime: Debian's package; installed here when running as root (as CI does) and missing
  if ! command -v faketime >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing Debian's faketime (the suite runs a year ahead and a year back)"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime; } \
        >"$logs/apt.log" 2>&1 || { cat "$logs/apt.log"; echo "could not install faketime"; }
    fi
  fi
  if ! command -v faketime >/dev/null 2>&1; then
    echo "faketime is missing (Debian's package faketime): the suite cannot be moved in time"
    exit 1
  fi
  # the process clock moved; monotonic time moves with it (faking only the wall clock makes
  # Python's time.sleep fail with EINVAL under libfaketime)
  run suite-year-ahead faketime -f '+365d' "${suite[@]}"
  run suite-year-back faketime -f '-365d' "${suite[@]}"
else
  # the parts that mostly wait start first, in the background
  "$BIN/pytest" -m e2e "${WAITS[@]}" -n 2 --dist loadfile -p no:cacheprovider --durations=2 \
    >"$logs/waits.out" 2>&1 &
  waits=$!
  "$BIN/python" tests/e2e/prefect_processes.py "$E2E_HOME" >"$logs/home.out" 2>&1 &
  home=$!
  # chromium: Debian's package, for the desk's browser tests; installed here, in the background
  # while lint, types and the suite run, when running as root (as CI does) and missing
  (
    if [ ! -x "$CHROMIUM" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing Debian's chromium (the desk's browser tests drive it)"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
        >"$logs/apt-chromium.log" 2>&1 || { cat "$logs/apt-chromium.log"; echo "could not install chromium"; }
    fi
  ) &
  chromium=$!
  echo "$BIN/pytest -m e2e ${WAITS[*]} (in the background, its output below after the suite's)"

  run lint bash -c "'$BIN/ruff' check src tests flows benchmarks && '$BIN/ruff' format --check src tests flows benchmarks"
  run types "$BIN/mypy"

  run suite "${suite[@]}"

  wait "$chromium"
  if [ -x "$CHROMIUM" ] || [ "${CI:-}" = "true" ]; then
    run browser "$BIN/pytest" -m browser tests/desk -p no:cacheprovider --durations=3
  else
    echo
    echo "=== browser: did not run ($CHROMIUM is missing): apt-get install chromium, then $BIN/pytest -m browser tests/desk"
  fi

  wait "$waits"
  status[deadline]=$?
  wait "$home"
  echo
  echo "=== deadline: ${WAITS[*]} (ran in the background)"
  cat "$logs/home.out" "$logs/waits.out"
  cp "$logs/waits.out" "$logs/deadline.log"
  parts+=(deadline)
  counts[deadline]=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$logs/deadline.log" | tail -n 1 |
    sed -E 's/^=+ //; s/ =+$//')

  run e2e env E2E_PREFECT_HOME_TEMPLATE="$PWD/$E2E_HOME" "$BIN/pytest" -m e2e tests/e2e \
    "${WAITS[@]/#/--deselect=}" -n "${E2E_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=10
fi

echo
echo "=== make test${1:+ $1}: every part ran"
failed=0
passed_total=0
failed_total=0
for name in "${parts[@]}"; do
  line=${counts[$name]:-}
  if [ "${status[$name]}" -eq 0 ]; then verdict=ok; else verdict="FAILED (exit ${status[$name]})"; failed=1; fi
  printf '%-17s %-18s %s\n' "$name" "$verdict" "$line"
  p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || true)
  f=$(grep -oE '[0-9]+ (failed|errors?)' <<<"$line" | awk '{ s += $1 } END { print s + 0 }')
  passed_total=$((passed_total + ${p:-0}))
  failed_total=$((failed_total + ${f:-0}))
  [ "${status[$name]}" -ne 0 ] && [ -z "$line" ] && failed_total=$((failed_total + 1))
done
echo "total: $passed_total passed, $failed_total failed"
exit $failed
