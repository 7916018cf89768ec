"""``center=False`` in xsvd.mca and xsvd.extended_eof warns as the main svd does (issue 29).

The rule and the message are the main svd's (:func:`xsvd.labeled.api.warn_uncentered`,
:meth:`xsvd.core.Decomposition.mean_share`): a warning where the features' means carry
more than half of the sum of squares. ``extended_eof`` takes the share from its ``U`` and
``S`` as the svd does; ``mca``, which has no SVD of each field, takes each field's share
exactly from its moments, and warns where either field's is above half.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr

import xsvd

T = 60


def _fields(offset: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((T, 2))
    left = common @ rng.standard_normal((2, 20)) + rng.standard_normal((T, 20)) + offset
    right = common @ rng.standard_normal((2, 15)) + rng.standard_normal((T, 15))
    return left, right


def _labeled(a, name: str, put=np.asarray):
    return xr.DataArray(put(a), dims=("time", name))


def _uncentered_warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if "center=False" in str(w.message)]


def _share(message: str) -> float:
    return float(re.search(r"carry (\d+)%", message).group(1)) / 100


def _exact_share(a) -> float:
    """The features' means' share of the sum of squares of ``a`` (samples x features)."""
    return float((a.mean(axis=0) ** 2).sum() * a.shape[0] / (a**2).sum())


def test_extended_eof_uncentered_warns_where_the_means_dominate(backend):
    left, _ = _fields(offset=4.0)
    call = lambda x, center: xsvd.extended_eof(  # noqa: E731
        _labeled(x, "p", backend), 2, embedding=3, tau=2, center=center, seed=0
    )
    (message,) = _uncentered_warnings(lambda: call(left, False))
    assert 0.5 < _share(message) <= round(_exact_share(left), 2) + 0.005
    assert "xsvd's default" not in message and "north_errors" not in message  # centers
    assert _uncentered_warnings(lambda: call(left, True)) == []
    anomalies = left - left.mean(axis=0)  # means near 0: nothing to say
    assert _uncentered_warnings(lambda: call(anomalies, False)) == []


@pytest.mark.parametrize("side", ["left", "right"])
def test_mca_uncentered_warns_for_either_field_with_its_exact_share(backend, side):
    offset, plain = _fields(offset=2.0, seed=1)
    left, right = (offset, plain) if side == "left" else (plain, offset)
    call = lambda center: xsvd.mca(  # noqa: E731
        _labeled(left, "p", backend), _labeled(right, "q", backend), 2, center=center, seed=0
    )
    (message,) = _uncentered_warnings(lambda: call(False))
    assert _share(message) == pytest.approx(round(_exact_share(offset), 2), abs=0.006)
    assert "xsvd's default" not in message and "center=True, the default" in message
    assert _share(message) > 0.5
    assert _uncentered_warnings(lambda: call(True)) == []
    anomalies = [x - x.mean(axis=0) for x in (left, right)]  # means near 0: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        xsvd.mca(
            *(_labeled(x, n, backend) for x, n in zip(anomalies, "pq", strict=True)),
            2,
            center=False,
            seed=0,
        )
