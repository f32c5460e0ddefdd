#!/usr/bin/env bash
# Installs the Debian packages HomeAI needs when they are missing (root or sudo).
#   scripts/system-deps.sh          what `make run` needs
#   scripts/system-deps.sh --test   plus Chromium and a Korean font for the browser tests, and GNU
#                                   gettext (the i18n tests compile the catalogs to compare them), and
#                                   docker-registry (the model-pull tests pull from it), and
#                                   python3-doc (the Python docs as HTML: bench_retrieval's corpus)
set -euo pipefail

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
python=${PYTHON:-python3}

have_cmd "$python" || need+=(python3)
"$python" -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
"$python" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  >/dev/null 2>&1 || need+=(python3-dev)
have_cmd cc || need+=(build-essential)
have_cmd c++ || need+=(g++)
have_cmd cmake || need+=(cmake)
have_cmd patch || need+=(patch) # patches/llama.cpp
have_cmd git || need+=(git)
have_cmd redis-server || need+=(redis-server)
have_cmd redis-cli || need+=(redis-tools)
if [[ "${1:-}" == "--test" ]]; then
  [[ -x /usr/bin/chromium ]] || need+=(chromium)
  # Korean glyphs for the browser tests and the docs' Korean screenshots.
  [[ -d /usr/share/fonts/truetype/nanum ]] || need+=(fonts-nanum)
  have_cmd msgfmt || need+=(gettext)
  # A real OCI distribution registry for the model-pull tests (tests/infra/pull).
  have_cmd docker-registry || need+=(docker-registry)
  # Debian's Python documentation as HTML, the labelled corpus of manage.py bench_retrieval.
  [[ -d /usr/share/doc/python3-doc/html/library ]] || need+=(python3-doc)
fi

if ((${#need[@]} == 0)); then
  exit 0
fi
echo "Installing Debian packages: ${need[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  have_cmd sudo || { echo "Please install as root: apt-get install ${need[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
