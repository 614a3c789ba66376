"""The notebooks run top to bottom on a fresh kernel, so they cannot rot.

Each notebook is executed with nbclient on a python3 kernel of *this* interpreter: a
kernelspec pointing at sys.executable is written to a temporary Jupyter path, so the test
never picks up another Python's kernel. Outputs are not written back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
NAMES = ("decay_curves", "scenario_comparison", "threshold_sensitivity")
CELL_TIMEOUT = 900  # seconds; the sweeps of threshold_sensitivity are the slowest cells


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A JUPYTER_PATH whose python3 kernelspec runs this interpreter."""
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    # The repository root goes first on the kernel's path: the kernel starts in notebooks/,
    # and an editable install made before a package had its __init__.py would otherwise
    # shadow it with a namespace package.
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (memsim tests)",
                "language": "python",
                "env": {"PYTHONPATH": pythonpath},
            }
        )
    )
    old = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "MPLBACKEND")}
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), old["JUPYTER_PATH"]]))
    os.environ.pop("MPLBACKEND", None)  # the notebooks choose the inline backend themselves
    yield root
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def test_notebooks_exist_and_are_stored_with_outputs():
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        assert all(c.get("execution_count") for c in code), (
            f"{name}: not executed before committing"
        )
        errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}: stored outputs contain an error: {errors[0].get('ename')}"
        assert any(
            o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
            for c in code
            for o in c.get("outputs", [])
        ), f"{name}: no figure in the stored outputs"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name, kernel_env):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{name}: drew no figure"
