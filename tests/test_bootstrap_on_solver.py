"""The bootstrap runs on the core's one block-Krylov loop (issue 29).

Each batch of replicates is one :func:`xsvd.core.randomized.solver.solve` of a
:class:`xsvd.climate.resampling.BatchSide`: a basis is the stack of the active
replicates' blocks, every replicate takes the core's stop test (``stopping``) and
one that may stop leaves the later reads; the loop makes the next basis only once
the stop test says to go on. NumPy, Dask (both layouts) and the strict device.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xsvd
from xsvd.climate import resampling
from xsvd.core.randomized import operator
from xsvd.core.randomized.small import CONVERGED, FIXED, MAX_PASSES, SPACE_FULL

M, NF = 150, 120


def _field(noise: float = 1.0, seed: int = 3) -> np.ndarray:
    """Two strong components on noise: replicates converge after a few passes, not all
    after the same number."""
    rng = np.random.default_rng(seed)
    return (
        6 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + 3 * np.outer(rng.standard_normal(M), rng.standard_normal(NF))
        + noise * rng.standard_normal((M, NF))
    )


def _labeled(a) -> xr.DataArray:
    return xr.DataArray(a, dims=("time", "x"), coords={"time": np.arange(M)})


@pytest.fixture
def spied(monkeypatch):
    """Every call of ``solve`` from the bootstrap (its side and the problem as it ran) and,
    per batch, how many replicates each read multiplied."""
    calls, widths = [], []
    solve, read = resampling.solve, resampling.BatchSide.read

    def spy_solve(ex, problem, omega, progress=None, make_side=None):
        out = solve(ex, problem, omega, progress, make_side)
        calls.append((make_side(ex, problem), out[-1]))
        return out

    def spy_read(self, basis, stats, fill, first):
        if first:
            widths.append([])
        widths[-1].append(int(basis.shape[0]))
        return read(self, basis, stats, fill, first)

    monkeypatch.setattr(resampling, "solve", spy_solve)
    monkeypatch.setattr(resampling.BatchSide, "read", spy_read)
    return calls, widths


def test_every_batch_is_one_solve_and_converged_replicates_leave_the_reads(backend, spied):
    """3 batches (7 replicates, 3 a batch, each with the data as column 0): 3 solves of a
    BatchSide; the replicates a read multiplies never grow within a batch and fall below
    the batch before its last pass; passes and stopped are the solves'."""
    calls, widths = spied
    X = _field(noise=4.0)
    options = dict(dim="time", seed=0, batch=3, tol=1e-5, max_passes=10)
    res = xsvd.bootstrap(_labeled(backend(X)), 2, 7, **options)
    assert len(calls) == 3
    assert all(isinstance(side, resampling.BatchSide) for side, _ in calls)
    reads = widths  # one list per batch
    assert [r[0] for r in reads] == [4, 4, 2]
    assert all(r == sorted(r, reverse=True) for r in reads)
    assert any(r[-1] < r[0] for r in reads)  # converged replicates left the later reads
    passes = [problem.n_power_iter + 1 for _, problem in calls]
    assert [len(r) for r in reads] == passes
    assert res.settings["passes"] == max(passes)
    assert res.settings["stopped"] == CONVERGED
    assert {problem.stopped for _, problem in calls} == {CONVERGED}
    again = 2 if backend.name == "dask-samples" else 1  # two reads a pass
    assert res.settings["reads"] == sum(again * p + 1 for p in passes)


@pytest.mark.parametrize(
    "options, why",
    [
        (dict(n_power_iter=2), FIXED),
        (dict(tol=1e-14, max_passes=3), MAX_PASSES),
        (dict(n_power_iter=0), FIXED),
    ],
    ids=["fixed", "max_passes", "one pass"],
)
def test_the_batch_stops_where_solve_says(backend, spied, options, why):
    """Fixed passes and max_passes: every replicate of every batch multiplied at every
    pass, the reason solve's."""
    calls, widths = spied
    X = _field(noise=3.0)
    with pytest.warns(RuntimeWarning, match="unconverged|was not reached"):
        res = xsvd.bootstrap(_labeled(backend(X)), 3, 5, dim="time", seed=0, batch=3, **options)
    most = options.get("n_power_iter", 2) + 1 if "tol" not in options else 3
    assert widths == [[4] * most, [3] * most]
    assert {problem.stopped for _, problem in calls} == {why} == {res.settings["stopped"]}


def test_a_space_that_fills_the_samples_stops_the_batch(backend, spied):
    """Few samples: the Krylov space fills them ('space full'), exact estimates."""
    calls, _ = spied
    X = _field()[:12, :40]
    da = xr.DataArray(backend(X), dims=("time", "x"))
    res = xsvd.bootstrap(da, 2, 3, dim="time", seed=0)
    assert [problem.stopped for _, problem in calls] == [SPACE_FULL]
    assert res.settings["stopped"] == SPACE_FULL


def test_solve_makes_the_next_basis_only_when_the_passes_go_on(monkeypatch):
    """The stop test runs before the next basis is made: a fused solve that converges
    made its next pair once per pass but the last (the loop used to make one more)."""
    made = []
    following = operator.FusedSide.following

    def spy(self, cross, bases):
        made.append(len(bases))
        return following(self, cross, bases)

    monkeypatch.setattr(operator.FusedSide, "following", spy)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((80, 3)) @ np.diag([50.0, 20.0, 5.0]) @ rng.standard_normal((3, 60))
    a += 1e-3 * rng.standard_normal(a.shape)
    res = operator.fused_operator_svd(lambda w, t: (a @ w, a.T @ t), a.shape, 2, tol=1e-6)
    assert res.stopped == CONVERGED and res.passes > 2
    assert made == list(range(1, res.passes))
