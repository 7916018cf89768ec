"""The shape of the package, checked: layers, public interfaces, module sizes.

- the array core (``xsvd.core``) never imports xarray or pint;
- no module reads another module's (or object's) private names: ``obj._x``
  only for ``self``/``cls``, and no ``from .mod import _x`` across modules;
- no module is over 600 lines;
- dask graphs through public APIs only (no ``HighLevelGraph`` layers of
  tuple tasks, no ``Delayed(key, graph)``), and no private xarray API.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "xsvd"
MODULES = sorted(ROOT.rglob("*.py"))
MAX_LINES = 600

#: ``module path: attribute`` reads of private names that are not xsvd's own
#: coupling, each with its reason.
ALLOWED_PRIVATE = {
    # pint has no public accessor of a unit's registry; the one place that knows pint
    ("labeled/units.py", "_REGISTRY"),
}


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_reads(source: str, name: str) -> list[str]:
    tree = ast.parse(source, filename=name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if (name, node.attr) in ALLOWED_PRIVATE:
                continue
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{name}:{node.lineno}: import of {alias.name}")
    return found


def test_core_never_imports_xarray_or_pint():
    code = (
        "import importlib, pkgutil, sys, types\n"
        "sys.modules['xarray'] = None; sys.modules['pint'] = None\n"
        f"pkg = types.ModuleType('xsvd'); pkg.__path__ = [{str(ROOT)!r}]\n"
        "sys.modules['xsvd'] = pkg\n"
        "import xsvd.core as core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'xsvd.core.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "import numpy as np\n"
        "d = core.randomized_svd(np.eye(30)[:, :20], 3, seed=0)\n"
        "assert d.S.shape == (3,) and core.exact_svd(np.eye(5)).S.shape == (5,)\n"
        "print(len(names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert int(out.stdout) >= 10  # every module of the core was imported


def test_no_module_reads_private_names_of_another():
    found = [line for p in MODULES for line in _private_reads(p.read_text(), _relative(p))]
    assert not found, "private names read across modules or objects:\n" + "\n".join(found)


def test_the_private_name_check_can_fail():
    source = (
        "from .result import _plain\n"
        "def f(self, res):\n"
        "    return self._d, res._layout, res.__class__, type(res)._meta\n"
    )
    found = _private_reads(source, "bad.py")
    assert {line.split(": ", 1)[1] for line in found} == {
        "import of _plain",
        "res._layout",
        "type(res)._meta",
    }


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_modules_are_small(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{_relative(path)} has {n} lines; split it by concern"


def test_public_apis_only_for_dask_graphs_and_xarray_accessors():
    banned = ("HighLevelGraph", "Delayed(", "_CachedAccessor", "dask.highlevelgraph")
    found = [f"{_relative(p)}: {word}" for p in MODULES for word in banned if word in p.read_text()]
    assert not found, found


def test_options_are_declared_once_and_every_entry_point_takes_them():
    import inspect
    from dataclasses import fields

    import xsvd
    from xsvd.core.options import CompressedOptions, Preprocessing
    from xsvd.labeled.api import Labeling

    every = (Labeling, Preprocessing, CompressedOptions)
    for fn, classes in [
        (xsvd.svd, every),
        (xsvd.compressed, every),
        (xsvd.exact, every[:2]),
        (xsvd.linalg.randomized_svd, every[1:]),
        (xsvd.linalg.exact_svd, every[1:2]),
    ]:
        params = inspect.signature(fn).parameters
        for cls in classes:
            for f in fields(cls):
                assert params[f.name].default == f.default, (fn.__name__, f.name)
                assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY
        # what no class declares is refused, as by any Python function
        with pytest.raises(TypeError, match="unexpected keyword argument 'n_power_iters'"):
            fn(None, 2, n_power_iters=3) if fn is not xsvd.exact else fn(None, n_power_iters=3)
    for f in fields(Labeling) + fields(Preprocessing) + fields(CompressedOptions):
        assert f.name in xsvd.svd.__doc__, f"option {f.name} is not documented in xsvd.svd"
    assert "n_power_iter" not in inspect.signature(xsvd.exact).parameters


#: The layers, lowest first: a module imports only from its own layer or below
#: (the analyses, io and plot are one layer, but none imports another of them).
LAYERS = {"core": 0, "labeled": 1, "io": 2, "climate": 2, "genomics": 2, "plot": 2}
#: Function-level imports that point up, each a forward of a result's method to the
#: layer that owns the work (as ``xarray.DataArray.plot`` forwards to ``xarray.plot``).
UPWARD_FORWARDS = {
    ("labeled/base.py", "xsvd.plot"),  # res.plot
    ("labeled/base.py", "xsvd.io.results"),  # res.to_dataset / to_zarr / from_dataset
    ("labeled/result.py", "xsvd.climate.rotation"),  # res.rotate
    ("climate/rotation.py", "xsvd.plot"),  # rotated.plot
}


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return (top, LAYERS[top]) if top in LAYERS else ("root", 3)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(imported xsvd module, line, at module level)`` of every import of ``path``."""
    parts = ("xsvd", *path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join((*base, *([node.module] if node.module else [])))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]  # a module or a name in one
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [(name, node.lineno, id(node) in top_level) for name in names]
    return found


def _upward_imports(paths) -> list[str]:
    bad = []
    for path in paths:
        rel = _relative(path)
        module = "xsvd." + rel.removesuffix(".py").replace("/", ".")
        own, level = _layer(module)
        for target, line, top in _imports(path):
            if target != "xsvd" and not target.startswith("xsvd."):
                continue
            other, other_level = _layer(target)
            if other_level < level or other == own or target == "xsvd":
                continue
            if not top and any(
                rel == f and (target == t or target.startswith(t + ".")) for f, t in UPWARD_FORWARDS
            ):
                continue
            bad.append(f"{rel}:{line}: imports {target} (layer {other}, above or beside {own})")
    return bad


def test_imports_point_one_way():
    """core <- labeled <- (io, climate, genomics, plot) <- the package root, never back."""
    bad = _upward_imports(MODULES)
    assert not bad, "imports that point up or sideways:\n" + "\n".join(bad)


def test_the_layer_check_can_fail(tmp_path):
    fake = ROOT / "labeled" / "zz_fake_module.py"
    source = "from ..climate import statistics\n\ndef f():\n    from ..plot import maps\n"
    try:
        fake.write_text(source)
        bad = _upward_imports([fake])
    finally:
        fake.unlink()
    assert len(bad) == 2 and "xsvd.climate" in bad[0] and "xsvd.plot" in bad[1]


def test_core_imports_nothing_above_it():
    """Every import in ``xsvd.core`` (module level or in a function) stays in the core."""
    core = ROOT / "core"
    bad = []
    for path in sorted(core.rglob("*.py")):
        parts = ("xsvd", *path.relative_to(ROOT).with_suffix("").parts)
        package = parts[:-1]  # a module's package; an __init__'s package is its folder
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1]
                targets = [".".join((*base, *filter(None, [node.module])))]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "xsvd" and target.split(".")[:2] != ["xsvd", "core"]:
                    bad.append(f"{_relative(path)}:{node.lineno}: imports {target}")
    assert not bad, "the core imports modules above it:\n" + "\n".join(bad)
