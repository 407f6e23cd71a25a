#!/usr/bin/env bash
# One-command, idempotent set-up: .venv from the committed lock, the package in editable mode,
# and the Delta Lake jars from Maven Central. A second run takes seconds (stamp files).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STAMPS=infra/.stamps
JARS=infra/jars
DELTA_VERSION=4.4.0
SPARK_MINOR=4.1
UV_VERSION=0.13.9
mkdir -p "$STAMPS" "$JARS"

die() { echo "setup: $*" >&2; exit 1; }

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PY=$cand; break
    fi
  done
fi
[ -n "$PY" ] || die "Python 3.11 is required (set PYTHON=/path/to/python3.11)."
command -v java >/dev/null 2>&1 || die "Java (OpenJDK 17) is required for Spark: install openjdk-17-jdk-headless."
command -v mvn >/dev/null 2>&1 || die "Maven is required to fetch the Delta Lake jars: install maven."

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PY"
  "$PY" -m venv .venv || die "could not create .venv (is python3.11-venv installed?)"
fi

# infra/requirements.lock pins every package; it is compiled from pyproject.toml (dependencies and
# the dev extra) and keeps its pins unless asked to move them. After changing those lists:
#   .venv/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 -o infra/requirements.lock
lock_sum=$(echo "uv $UV_VERSION" | cat - infra/requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$STAMPS/packages-$lock_sum" ]; then
  echo "setup: installing Python packages from infra/requirements.lock (first run takes a few minutes)"
  # uv installs the lock (several times faster than pip; measurements: docs/performance.md);
  # pip only installs uv itself
  .venv/bin/python -m pip install -q "uv==$UV_VERSION" \
    || die "pip could not install uv $UV_VERSION: is PyPI reachable?"
  .venv/bin/uv pip install -q --python .venv/bin/python -r infra/requirements.lock \
    || die "installing infra/requirements.lock failed: is PyPI reachable? see the uv output above."
  .venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e . \
    || die "installing the aspen package (editable) failed."
  rm -f "$STAMPS"/pip-* "$STAMPS"/packages-*
  touch "$STAMPS/packages-$lock_sum"
fi

for artifact in "io.delta:delta-spark_${SPARK_MINOR}_2.13:${DELTA_VERSION}" "io.delta:delta-storage:${DELTA_VERSION}"; do
  name=$(echo "$artifact" | cut -d: -f2)
  if [ ! -f "$JARS/$name-$DELTA_VERSION.jar" ]; then
    echo "setup: fetching $artifact from Maven Central"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="$artifact" -DoutputDirectory="$ROOT/$JARS" >/tmp/aspen-mvn.log 2>&1 \
      || { tail -20 /tmp/aspen-mvn.log >&2; die "Maven could not fetch $artifact (is Maven Central reachable?)."; }
  fi
done
# The compiled inner loops of the BDD forest encoder and decoder (aspen.provenance.forest_native):
# plain C, no headers; rebuilt when its source changes. Needs a C compiler (Debian package gcc).
FOREST_SRC=libs/aspen/provenance/forest.c
FOREST_LIB=libs/aspen/provenance/_forest.so
forest_sum=$(sha256sum "$FOREST_SRC" | cut -c1-16)
if [ ! -f "$STAMPS/forest-$forest_sum" ] || [ ! -f "$FOREST_LIB" ]; then
  if ! command -v cc >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 \
      || die "a C compiler is required to build $FOREST_LIB and apt-get is unavailable: install gcc."
    echo "setup: installing gcc (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev; } \
      >/tmp/aspen-apt.log 2>&1 \
      || { tail -20 /tmp/aspen-apt.log >&2; die "apt-get could not install gcc (are you root, is the Debian mirror reachable?)."; }
  fi
  echo "setup: compiling $FOREST_LIB"
  cc -O2 -shared -fPIC -Wall -Wextra -Werror -o "$FOREST_LIB" "$FOREST_SRC" \
    || die "compiling $FOREST_SRC failed (see the compiler output above)."
  rm -f "$STAMPS"/forest-*
  touch "$STAMPS/forest-$forest_sum"
fi
# The compiled engine core (aspen.engine.native, docs/decisions/0053-compiled-core.md): a Rust
# cdylib with no dependencies, so `cargo build --offline` fetches nothing; rebuilt when a source
# changes. Needs cargo (Debian package cargo).
CORE_DIR=libs/aspen_core
CORE_LIB=libs/aspen/engine/native/_core.so
core_sum=$(cat "$CORE_DIR/Cargo.toml" "$CORE_DIR/Cargo.lock" $(find "$CORE_DIR/src" -name '*.rs' | sort) \
  | sha256sum | cut -c1-16)
if [ ! -f "$STAMPS/core-$core_sum" ] || [ ! -f "$CORE_LIB" ]; then
  if ! command -v cargo >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 \
      || die "Rust's cargo is required to build $CORE_LIB and apt-get is unavailable: install cargo."
    echo "setup: installing cargo (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cargo; } \
      >/tmp/aspen-apt.log 2>&1 \
      || { tail -20 /tmp/aspen-apt.log >&2; die "apt-get could not install cargo (are you root, is the Debian mirror reachable?)."; }
  fi
  echo "setup: compiling $CORE_LIB"
  CARGO_TARGET_DIR="$ROOT/infra/.cargo-target" cargo build --release --offline --quiet \
    --manifest-path "$CORE_DIR/Cargo.toml" \
    || die "compiling $CORE_DIR failed (see the cargo output above)."
  # a new file, not one rewritten in place: a running process keeps the library it mapped
  cp "infra/.cargo-target/release/libaspen_core.so" "$CORE_LIB.tmp" && mv -f "$CORE_LIB.tmp" "$CORE_LIB" \
    || die "could not copy the compiled core to $CORE_LIB."
  rm -f "$STAMPS"/core-*
  touch "$STAMPS/core-$core_sum"
fi
# Headless Chromium for the dashboard's browser test (Playwright drives the Debian binary; it never
# downloads its own browsers). Skipped when chromium is already on PATH.
if [ ! -f "$STAMPS/chromium" ] || ! command -v chromium >/dev/null 2>&1; then
  if ! command -v chromium >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 \
      || die "chromium is required for the browser test and apt-get is unavailable: install chromium (Debian package 'chromium') and put it on PATH."
    echo "setup: installing chromium (apt-get; first run takes a minute)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; } \
      >/tmp/aspen-apt.log 2>&1 \
      || { tail -20 /tmp/aspen-apt.log >&2; die "apt-get could not install chromium (are you root, is the Debian mirror reachable?)."; }
  fi
  touch "$STAMPS/chromium"
fi
echo "setup: ready (.venv, $JARS, $FOREST_LIB, $CORE_LIB, chromium)"
