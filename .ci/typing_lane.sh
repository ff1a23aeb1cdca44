#!/usr/bin/env bash
# CI lane (issue 19): a user's project type-checks against kvoffload installed from a
# wheel (the editable install of the README is checked by tests/test_typed_user.py in
# the main test run). Fresh virtual environment; fails on any mypy error.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip wheel -q --no-deps -w "$work/dist" .
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$work"/dist/kvoffload-*.whl "torch==2.13.0" "mypy>=1.10"
# The wheel carries the PEP 561 marker and the contract text (run outside the checkout,
# so that the import finds the installed copy, not the source tree).
(cd "$work" && "$work/venv/bin/python" - <<'PY'
from importlib import resources
package = resources.files("kvoffload")
assert package.joinpath("py.typed").is_file(), "the wheel lacks py.typed"
assert package.joinpath("spec", "CONTRACT.md").is_file(), "the wheel lacks spec/CONTRACT.md"
assert "site-packages" in str(package), f"imported {package}, not the installed wheel"
print("wheel installed at", package)
PY
)
cd examples/typed_user
"$work/venv/bin/python" -m mypy --cache-dir "$work/mypy-cache"
