#!/bin/bash
# What a GPU machine without network needs to run galax and benchmarks/device.py, beside
# its own Python 3.12 with jax (CUDA), flax, optax, chex and orbax: cp312 wheels of galax's
# other dependencies and an envpool cut to atari, classic_control, gfootball and toy_text
# (the full wheel's MuJoCo, ViZDoom and Procgen assets would not fit), plus the cleanrl
# 1.2.0 wheel for benchmarks/atari_peer.py. All in .whl/ of this checkout, under 64 MiB.
#
#   bash benchmarks/device_wheels.sh             # here, with network: fills .whl/
#   bash .whl/device_wheels.sh --install         # there: installs into /tmp/site
#   export PYTHONPATH=/tmp/site:$PWD             # then run.py and benchmarks/ work as usual
set -e
if [ "$1" = "--install" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  tar xJf .whl/envpool-slim.tar.xz -C /tmp/site
  exit 0
fi
self=$(readlink -f "$0")
cd "$(dirname "$self")/.."
rm -rf .whl && mkdir -p .whl/cleanrl
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any"
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT -d "$1" "$2"; }
tmp=$(mktemp -d)
dl "$tmp" envpool==1.2.5
dl "$tmp" "envpool-assets>=0.3,<0.4"
for p in dm-env dm-tree optree gymnasium farama-notifications ml-collections tensorboardx \
         "gymnax>=1.0,<1.1" six; do
  dl .whl "$p"
done
python3 -m pip download -q --no-deps --ignore-requires-python -d .whl/cleanrl cleanrl==1.2.0
(cd "$tmp" && mkdir x && cd x && for w in ../*.whl; do unzip -q -o "$w"; done \
  && rm -rf envpool/mujoco envpool/vizdoom envpool/procgen envpool/pgx envpool/jumanji \
            envpool/highway envpool/minigrid envpool/box2d \
            envpool_assets/mujoco envpool_assets/vizdoom envpool_assets/procgen \
  && python3 - <<'PY'
# entry.py imports every env family; keep the lines of the families left.
p = 'envpool/entry.py'
keep = ('atari', 'classic_control', 'gfootball', 'toy_text')
lines = [l for l in open(p).read().splitlines()
         if not (l.startswith('import envpool.') and not any(f'envpool.{k}.' in l for k in keep))]
open(p, 'w').write('\n'.join(lines) + '\n')
PY
  tar cJf envpool-slim.tar.xz envpool envpool_assets envpool*.dist-info envpool.libs)
mv "$tmp/x/envpool-slim.tar.xz" .whl/ && rm -rf "$tmp"
cp "$self" .whl/device_wheels.sh
du -sh .whl
