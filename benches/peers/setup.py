"""Create the peers' Python environment and install the peer libraries by name.

usage: python3 benches/peers/setup.py VENV_DIR

Creates VENV_DIR (a virtual environment) if it does not exist, then installs each
package of PACKAGES with that environment's pip, one at a time, so that one package
failing does not stop the others. Prints one JSON line per package (the schema of
benches/peers/README.md, "kind": "install") and exits 0 even when some fail: the
benchmark page marks the peers that need them as "not measured" with the reason.
"""

import json
import subprocess
import sys
import time
import venv
from pathlib import Path

# (import name, pip requirement). torch's CPU and CUDA wheels are both ~GB; the
# default index gives the CUDA build, which runs on CPU.
PACKAGES = [
    ("numpy", "numpy"),
    ("scipy", "scipy"),
    ("torch", "torch"),
    ("torch_geometric", "torch_geometric"),
    ("jax", "jax[cpu]"),
    ("optax", "optax"),
]


def emit(**record):
    print(json.dumps({"kind": "install", **record}), flush=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    env = Path(sys.argv[1])
    py = env / "bin" / "python"
    if not py.exists():
        venv.EnvBuilder(with_pip=True).create(env)
    for module, requirement in PACKAGES:
        probe = subprocess.run(
            [py, "-c", f"import {module}; print({module}.__version__)"],
            capture_output=True, text=True,
        )
        if probe.returncode == 0:
            emit(package=requirement, status="ok", version=probe.stdout.strip(), seconds=0.0)
            continue
        start = time.time()
        r = subprocess.run(
            [py, "-m", "pip", "install", "--disable-pip-version-check", "-q", requirement],
            capture_output=True, text=True,
        )
        secs = round(time.time() - start, 1)
        probe = subprocess.run(
            [py, "-c", f"import {module}; print({module}.__version__)"],
            capture_output=True, text=True,
        )
        if r.returncode == 0 and probe.returncode == 0:
            emit(package=requirement, status="ok", version=probe.stdout.strip(), seconds=secs)
        else:
            tail = (r.stderr or probe.stderr or "").strip().splitlines()[-3:]
            emit(package=requirement, status="failed", reason=" | ".join(tail)[:300], seconds=secs)


if __name__ == "__main__":
    main()
