#!/usr/bin/env bash
# Installs the build and test dependencies (Debian packages) when missing.
set -euo pipefail

packages=(build-essential cmake pkg-config python3 python3-pip
          libopenblas-dev libopenblas-openmp-dev liblapacke-dev libsentencepiece-dev nlohmann-json3-dev libcli11-dev libssl-dev libpcre2-dev libminizip-dev zlib1g-dev libcpp-httplib-dev python3-venv
          libgtest-dev libgmock-dev clang-14 libclang-rt-14-dev libomp-14-dev)
packages+=(libicu-dev)  # Unicode for the BERT tokenizer
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# Python helpers some tests use to write fixtures (they skip without them).
if ! python3 -c "import numpy, safetensors" 2>/dev/null; then
  python3 -m pip install --quiet numpy safetensors >&2 ||
    echo "note: could not pip-install numpy/safetensors; the tests that need them will skip" >&2
fi
