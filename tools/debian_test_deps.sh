#!/usr/bin/env bash
# Debian packages the test suite drives besides Python: Chromium (the web console's end-to-end tests, with
# Playwright), promtool (from the prometheus package, checks the /metrics output) and kcat (linked to
# Debian's librdkafka, older than 2.6.1: tests/oracle/test_scram_clients.py checks such clients' SCRAM) and faketime
# (libfaketime: the fault lab's clock-jump nemesis, tests/fault/test_jepsen.py) and node + npm (tests/js: kafkajs and
# @kafkajs/confluent-schema-registry, installed by tests/js/deps.py). Installed only when a
# command is missing and this runs as root with apt-get (a CI machine); otherwise it says what is missing
# and carries on: those tests skip locally and fail in CI (tests/toolchain.py).
set -uo pipefail
declare -A PACKAGE_OF=([chromium]=chromium [promtool]=prometheus [kcat]=kcat [faketime]=faketime [node]=nodejs [npm]=npm)
missing=()
for cmd in "${!PACKAGE_OF[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${PACKAGE_OF[$cmd]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tools/debian_test_deps.sh: not installing ${missing[*]} (needs root and apt-get); their tests will skip" >&2
    exit 0
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/tidelog-apt.log 2>&1; then
    apt-get update -q >>/tmp/tidelog-apt.log 2>&1
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/tidelog-apt.log 2>&1 \
        || { echo "tools/debian_test_deps.sh: apt-get install ${missing[*]} failed (see /tmp/tidelog-apt.log)" >&2; exit 0; }
fi
