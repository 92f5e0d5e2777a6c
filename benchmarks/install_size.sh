#!/usr/bin/env bash
# Size and time of the README's installs, each in a new virtual environment on a fresh clone.
#
#     bash benchmarks/install_size.sh [REPOSITORY] [WORK_FOLDER]
#     bash benchmarks/install_size.sh --pieces [REPOSITORY] [WORK_FOLDER]
#
# REPOSITORY (default: this clone) is cloned into WORK_FOLDER (default: a new folder under /tmp); then, each in
# its own new venv made by `python3 -m venv`:
#   default  pip install -e .
#   embed    pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
#            pip install -e '.[embed]'
#            pip install --no-deps resemblyzer==0.1.4
# Printed per install: wall seconds, `du -sh` of the venv, the 1-minute load average before and after
# (/proc/loadavg), and the installed packages named nvidia-* or cuda-* (a CUDA build of torch brings them; the
# CPU build none). After the embed install, `vpeval doctor` and, where Debian's pocketsphinx-testdata is
# installed, `vpeval embed -e resemblyzer` on its five LibriVox utterances. pip's own cache is used as it is
# (warm or cold is printed: the size of `pip cache dir`).
# With --pieces: for each optional piece that pip installs (audio, asr, tts, semantic, vocoder, cluster, fast, onnx,
# voicefilter; PIECES="onnx voicefilter" measures only those), a new
# venv gets `pip install -e .`, then the command `vpeval doctor --json` names for the piece; printed are the
# piece's seconds and the growth of the venv (`du -sm` after minus before). The browser piece comes from
# Debian's packages: its line is the Installed-Size that dpkg records for chromium and its own packages.
set -euo pipefail
pieces=0
if [ "${1:-}" = "--pieces" ]; then pieces=1; shift; fi
repo="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
work="${2:-$(mktemp -d /tmp/vpeval-install-XXXXXX)}"
mkdir -p "$work"
git clone -q "$repo" "$work/clone"
cd "$work/clone"
echo "clone of $repo at $(git rev-parse --short HEAD) in $work/clone; $(python3 --version)"
echo "pip cache: $(du -sh "$(python3 -m pip cache dir 2>/dev/null || echo /nonexistent)" 2>/dev/null | cut -f1 || echo none)"

measure() {  # name, then the install commands as one string run in the venv
  local name="$1" cmds="$2" venv="$work/venv-$1"
  python3 -m venv "$venv"
  local load0 t0 t1 load1
  load0="$(cut -d' ' -f1 /proc/loadavg)"
  t0="$(date +%s.%N)"
  (. "$venv/bin/activate" && eval "$cmds") >"$work/$name.log" 2>&1
  t1="$(date +%s.%N)"
  load1="$(cut -d' ' -f1 /proc/loadavg)"
  local cuda
  cuda="$("$venv/bin/python" -m pip list 2>/dev/null | grep -ciE '^(nvidia|cuda)-' || true)"
  printf '%-8s %6.0f s  %6s  load %s -> %s  nvidia/cuda packages: %s\n' "$name" \
    "$(echo "$t1 - $t0" | bc)" "$(du -sh "$venv" | cut -f1)" "$load0" "$load1" "$cuda"
}

if [ "$pieces" = 1 ]; then
  python3 -m venv "$work/venv-base"
  (. "$work/venv-base/bin/activate" && pip install -q -e .) >/dev/null 2>&1
  "$work/venv-base/bin/vpeval" doctor --json >"$work/pieces.json"
  for piece in ${PIECES:-audio asr tts semantic vocoder cluster fast onnx voicefilter}; do
    cmd="$(python3 -c "import json,sys; print(next(p['command'] for p in json.load(open(sys.argv[1]))['pieces'] \
if p['name'] == sys.argv[2]))" "$work/pieces.json" "$piece")"
    venv="$work/venv-$piece"
    python3 -m venv "$venv"
    (. "$venv/bin/activate" && pip install -q -e .) >/dev/null 2>&1
    before="$(du -sm "$venv" | cut -f1)"
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    t0="$(date +%s.%N)"
    (. "$venv/bin/activate" && eval "$cmd") >"$work/$piece.log" 2>&1
    t1="$(date +%s.%N)"
    printf '%-9s +%5s MB %5.0f s  load %s -> %s  %s\n' "$piece" "$(( $(du -sm "$venv" | cut -f1) - before ))" \
      "$(python3 -c "print($t1 - $t0)")" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$cmd"
    rm -rf "$venv"
  done
  printf 'browser   +%5s MB (dpkg Installed-Size of chromium chromium-common chromium-driver)\n' \
    "$(( $(dpkg-query -W -f='${Installed-Size}\n' chromium chromium-common chromium-driver \
          2>/dev/null | paste -sd+ | bc) / 1024 ))"
  exit 0
fi

measure default "pip install -e ."
measure embed "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && \
pip install -e '.[embed]' && pip install --no-deps resemblyzer==0.1.4"

"$work/venv-embed/bin/vpeval" doctor
data=/usr/share/pocketsphinx/test/data/librivox
if [ -d "$data" ]; then
  mkdir -p "$work/audio"
  for f in "$data"/*.wav; do cp "$f" "$work/audio/austen-$(basename "$f" .wav | sed 's/.*-//').wav"; done
  "$work/venv-embed/bin/vpeval" embed "$work/audio" -o "$work/austen.npz" -e resemblyzer -q
fi
