# What the shell tests share (source it): counted verdicts and waiting on an
# observable event with a deadline instead of sleeping a fixed time.
#   ok; bad "what failed"; skip_check "what cannot run here and why"
#   wait_until SECONDS COMMAND...    (COMMAND every 20 ms until it succeeds)
#   finish                           (exit 1 on a failure, 77 on a skip, else 0)
pass=0 fail=0 skipped=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
skip_check() { skipped=$((skipped + 1)); echo "SKIP: $*"; }

# wait_until SECONDS COMMAND...: true once COMMAND succeeds, false when
# SECONDS pass first.
wait_until() {
  local end=$(($(date +%s%N) + $1 * 1000000000))
  shift
  until "$@"; do
    [ "$(date +%s%N)" -lt "$end" ] || return 1
    sleep 0.02
  done
}

# lines_at_least FILE N: FILE exists and holds N lines or more.
lines_at_least() { [ -e "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }

finish() {
  echo "$pass passed, $fail failed, $skipped skipped"
  [ "$fail" -eq 0 ] || exit 1
  [ "$skipped" -eq 0 ] || exit 77
  exit 0
}
