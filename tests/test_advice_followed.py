"""Every piece of advice in an error or warning message, followed, gives the right answer
(issue 31: "every piece of advice in an error message is tested to give the right answer
when followed").

Each test triggers the message on real input, then does what the message says (the code
in its backticks where it has some, run as written with ``eval``/``exec``), and checks the
answer against a NumPy truth computed here (``numpy.linalg.svd`` of the centered, weighted
matrix prepared by hand), not merely that the call runs.

How to read the table. One row per message that tells the user what to do, by file
(line at the time of writing, and the function), what triggers it, the advice, and where it
is followed: ``T`` a test here (``test_`` left off the name); ``C`` covered by a followed-advice
test elsewhere; ``X`` followed here as a strict xfail: the advice is wrong, and the change
it needs is reported (the message is in a file another session owns); ``N`` not followable
in a test (an outside tool, an install, a damaged file); ``D`` diagnosis or the allowed
values only, no call to follow; ``N*``: the advice of solver.py 363 (a larger max_passes),
followed for the SVD only. ``*`` marks a message fixed in this change (the old advice
was wrong or named no call).

labeled/layout.py
  66 from_dataarray   not a DataArray -> ``xr.DataArray(array, dims=(...))``, ``ds['sst']``
                      T plain_array_advice_wraps_it, dataset_advice_picks_the_variable
  78, 84              dim names nothing / no such dim -> one of the dims   T dim_naming_no_dim..
  92                  every dim as samples -> leave one out   T every_dim_as_samples_advice..
  98                  a dim named 'component' -> ``da.rename({'component': 'mode'})``
                      T component_dim_advice_renames_it
  72, 89, 105         under 2 dims / dim twice / empty data    D
  158, 168 *          new data lack the single size-1 label -> ``data.sel(level=850.0)`` of
                      data that hold it (was ``.sel(...)`` on the new data, which lack it)
                      T single_level_advice_selects_it_where_the_data_hold_it
  183                 new data lack a feature dim                D
  189 *               other feature count -> ``new.sel(lon=res.V['lon'])`` or ``isel``
                      (was "``.sel()`` or ``.reindex_like()``")
                      T other_feature_count_advice_selects_the_decomposed_features
  199 *               other feature labels -> ``new.reindex_like(res.V)`` (was ``(...)``)
                      T other_coordinate_advice_reindexes_like_the_result
labeled/dims.py
  105 default_sample_dim  ambiguous sample dim -> ``dim='time'`` / ``dim=<first>``
                      T ambiguous_sample_dim_advice_names_one, time_not_first_advice_..
  nan_hint (152, 170) swapped dims -> ``dim='time'``; all-NaN samples -> ``da.dropna(...,
                      how='all')``   T swapped_dims_advice_passes_the_time_dim,
                      all_nan_samples_advice_drops_them (message: C test_defaults.py)
labeled/base.py
  264, 268            reconstruct/project not defined -> the class's reason (bootstrap:
                      "use ``xsvd.svd``")   T bootstrap_reconstruct_advice_uses_xsvd_svd;
                      MCA, extended, Hilbert: "run ... on the data" D
  276 _check_k        k a bool -> omit it   T boolean_k_advice_omits_it;   281 D
labeled/result.py
  377 project         missing='zero' -> ``missing='mean'``   T unknown_missing_advice_..
  383                 missing='mean', uncentered -> ``center=True`` or ``new.fillna(value)``
                      T missing_mean_of_an_uncentered_result_advice_centers
  422 _zero_masked *  NaN in new data -> ``missing='mean'`` or ``new.interpolate_na(dim)``
                      (was "Fill or drop them")   T nan_in_new_data_advice
  449 _in_memory_of   Dask data, device result -> ``other.compute()`` / ``res.as_numpy()``
                      T lazy_data_on_a_device_result_advice (strict device)
labeled/statistics.py
  65 _check_ddof *    ddof >= n -> ``ddof=0 or 1``; for one sample ``ddof=0`` alone (1
                      failed the same way)   T ddof_advice_of_a_single_sample;   63, 80 D
  392 _aligned_field * data lack some of the decomposition's labels -> decompose their
                      samples, ``da.sel(time=data['time']).svd(...)`` (was
                      ``data.sel(time=res.U['time'])``: a KeyError, they lack those labels)
                      T data_over_fewer_samples_advice_decomposes_their_period
  401 *               other sample count, no labels -> ``data.isel(time=slice(0, n))`` (was
                      "Select the same samples")   T data_of_other_sample_count_without_..
  408                 a 'component' dim -> ``data.rename(...)``   T component_dim_in_stat..
  374, 383, 414       not a DataArray / no sample dim / not numeric   D
labeled/units.py
  160 attr_units      quantified weights, unknown units attribute -> ``da.pint.quantify('K')``
                      T unknown_units_attribute_with_quantified_weights_advice_quantifies
  284 magnitude_in    plain new data -> ``new.pint.quantify(...)``   T new_data_without_un..
  295                 quantified new data, plain result -> ``new.pint.dequantify()``
                      T quantified_new_data_for_a_plain_result_advice_dequantifies_them
  336 _converted      units pint cannot convert -> convert and set the attribute
                      T units_pint_cannot_convert_advice_converts_by_hand
  327                 without pint -> convert, or install pint   N (pint absent);  304 D
climate/weights.py *  (unnamed data were called "None" in 93 and 105)
  93, 105 coslat_weights  lat= names none / no latitude found -> name it with ``lat=``
                      T coslat_without_a_known_latitude_advice_names_it
  114                 latitude along the samples -> decompose along time
                      T latitude_along_the_samples_advice_decomposes_along_time;  122 D
climate/multivariate.py
  stacked as_variables a DataArray -> ``da.svd(...)``   T dataarray_to_the_multivariate_svd..
  503                 coordinates only -> ``xr.Dataset({'sst': sst, 'slp': slp})``
                      T dataset_of_coordinates_only_advice_makes_them_variables
  530 _sample_dims    default dims differ -> ``dim=...``   T variables_with_other_default..
  541, 547            no sample / no feature dim -> ``ds.drop_vars(...)``,
                      ``ds[...].expand_dims('point')``   T variable_without_a_dim_advice_..,
                      variable_without_features_advice_gives_it_one
  275 to_matrix       a text variable -> ``ds[[...]]`` / ``ds.drop_vars(...)``
                      T text_variable_advice_selects_the_fields
  295, 302            weights keyed wrong / lacking one -> ``weights={...}``,
                      ``weights={**weights, 'slp': None}``   T weights_for_an_unknown_var..,
                      weights_lacking_a_variable_advice_gives_it_none
  340                 equal_variance, variance 0 -> ``ds.drop_vars(...)``
                      C test_trust_advice.py::test_equal_variance_with_a_variable_of_no_..
  561, 444, 195       samples differ / new data over other periods / gaps -> ``xr.align(...,
                      exclude=...)``   C test_trust_advice.py (three tests)
  574 _check_shared   same-named feature dims -> ``b.rename(lat='lat_b')``
                      T same_named_feature_dims_advice_renames_one
  430 combined_new    new data lack a variable   T new_data_lacking_a_variable_advice_..
climate/rotation.py
  290 rotate          power with varimax -> ``method='promax'`` or leave out power
                      T power_with_varimax_advice
  300                 n=1 -> n between 2 and k   T rotating_one_component_advice_takes_two
  413 varimax         unconverged (warning) -> larger max_iter   T unconverged_varimax_..
  166 reconstruct     k < n rotated -> ``res.unrotated.reconstruct(k)``
                      T reconstruct_with_fewer_rotated_components_advice;  288, 297-307 D
core/common.py
  153 validate_shape  center=True, one sample -> center=False   T single_sample_advice_..
  164 validate_k      compressed without k -> ``.svd.compressed(k=10)``
                      T compressed_without_k_advice_passes_k
  178                 k too large -> k <= limit   T k_out_of_range_advice_takes_the_largest
  148, 170, 173       empty data / k not an integer / k < 1   D
core/backend.py
  545 compute_dtype   not numeric -> ``da.astype('float64')``   T non_numeric_data_advice_..
  537                 complex -> the real form ``np.block(...)``
                      C test_trust_numerics.py::test_complex_input_advice_gives_the_complex_svd
  464-470             CuPy / a GPU missing -> ``pip install "xsvd[gpu]"``   N;  517, 529 D
core/config.py
  109, 114 set_options  unknown option / below its least -> the options, the bound
                      T set_options_advice_names_the_options_and_bounds

Files of other sessions (their advice tested here; changes reported, not made):
core/missing.py
  119, 130, 173       missing='fill' / negative_missing with missing='error' / NaN ->
                      ``missing='mean'``   T missing_advice_takes_the_feature_means
  NAN_ADVICE          -> ``da.interpolate_na(dim)``   T nan_advice_interpolate_fills_the_gaps;
                      -> ``da.where(da.notnull().all(dim))`` (was ``da.dropna(...)``: no
                      call; ``dropna('time')`` dropped every sample where land is NaN)
                      T nan_advice_leaves_the_gappy_features_out
  INFINITE_ADVICE     -> ``da.where(np.isfinite(da))`` + missing='mean'
                      T infinite_values_advice_makes_them_nan_then_means
core/options.py
  74 check_count      a bool count -> ``n_power_iter=3``   T boolean_count_advice_passes_a_..
  220, 225, 229, 236  n_power_iter and tol / tol out of range / tol lazy / max_passes alone
                      T n_power_iter_and_tol_advice_keeps_one, tol_out_of_range_advice_..,
                      tol_with_a_lazy_result_advice_computes, max_passes_without_tol_..
  152-175 center      center= values (CENTER_HOW) -> True/False/values   D (values: below)
core/randomized/    solver.py 391 krylov=False warning -> keep krylov=True
                      T rough_estimates_warning_advice_keeps_krylov;  solver.py 363 (tol not
                      reached -> larger max_passes) T tol_not_reached_warning_advice_..;
                      plan.py 284 (exact cheaper) T exact_is_cheaper_warning_advice_..;
                      plan.py 250, 261 (chunk sizes) N (GiB stripes); magnitude.py 189
                      (compute=True) N (needs a lazy overflow); exact.py 265 N (GiB blocks)
labeled/preprocess.py
  47 weights_vector   NumPy weights -> ``xsvd.coslat_weights(da)``
                      T weights_as_a_plain_array_advice_uses_coslat_weights
  228 _aligned        weights on other labels -> ``w.reindex(...)``, ``w.assign_coords(...)``
                      T weights_on_other_labels_advice
  116                 NaN/negative weights at the poles -> clip; degrees to np.cos
                      C test_trust_advice.py (float32 poles, degrees)
  160, 193 center_vector  center as a plain array / NaN -> ``xr.DataArray(...)``,
                      ``center.fillna(0)``   T center_as_a_plain_array_advice_wraps_it,
                      center_with_nan_advice_fills_them;  169, 177, 183 D
  283 standardized_weights  std whose reciprocal overflows -> ``da * 1e300``
                      T standardize_of_tiny_values_advice_scales_them_up;  267 D
labeled/api.py
  106 choose_method   both sides large, no k -> ``da.svd(k=10)`` or ``method='exact'``
                      T large_matrix_without_k_advice (exact: marked slow)
  364 solve_matrix    compressed options, exact -> drop or ``method='compressed'``
                      T compressed_options_for_the_exact_svd_advice
  394 warn_uncentered -> center=True   C test_center_warning.py
climate/fields.py
  419 check_same_memory  two memories -> ``left.as_numpy()``   T mca_fields_in_two_memories..
                      (CuPy); X on array-api-strict (xarray's as_numpy cannot copy it)
  533, 538, 543       exact + compressed options / krylov=False / dtype= ->
                      drop, ``method='compressed'``, ``da.astype('float32')``
                      T mca_compressed_options_for_exact_advice, mca_krylov_false_advice_..,
                      mca_dtype_advice_converts_the_data
  prepare_field *     NaN at some samples / inf (mca, extended_eof) -> the core's NAN_ADVICE,
                      INFINITE_ADVICE: ``missing='mean'``, ``da.interpolate_na(dim)``,
                      ``da.where(np.isfinite(da))`` (was NO_MISSING: "take no `missing=`")
                      T mca_gaps_advice_interpolates, mca_and_extended_gaps_advice_takes_the_means
climate/mca.py 252, 264   samples differ -> ``xr.align(..., exclude=...)``
                      C test_trust_mca.py::test_misaligned_fields_advice_aligns_the_samples_..
climate/hilbert.py, analytic_field.py, extended.py
  hilbert 420, 495, 500  options for the exact solver -> drop or ``method='compressed'``
                      T hilbert_compressed_options_for_exact_advice
  hilbert 429, 442    compressed without k / k above the ocean features -> ``k=``, k <= n
                      T hilbert_compressed_without_k_advice_passes_k,
                      hilbert_k_above_the_ocean_features_advice;  hilbert 559 (tol) N*
  analytic_field 329 * gaps -> ``missing='mean'`` (was refused: no missing=) /
                      ``da.interpolate_na('time')`` / ``da.fillna(0)``
                      T hilbert_gaps_advice_fills_them
  extended 136        embedding too long -> fewer lags
                      T extended_eof_embedding_too_long_advice_uses_fewer_lags
climate/bootstrap.py, resampling.py
  bootstrap 57, 63, 192   dtype= / krylov=False / ci=95 -> leave out, ``0.95``
                      T bootstrap_option_advice_leaves_it_out, bootstrap_ci_advice_..
  bootstrap 275, 420  unconverged (warning) / replicate_V -> leave out n_power_iter,
                      ``keep_patterns=True``   T bootstrap_unconverged_advice_..,
                      bootstrap_replicate_patterns_advice_keeps_them;  bootstrap 266 (tol) N*
  resampling NAN_ADVICE  -> ``da.interpolate_na(dim)``   T bootstrap_gaps_advice;
                      -> ``da.where(da.notnull().all(dim))`` (was ``da.dropna(dim,
                      how='any')``: dropped every sample where land is NaN)
                      T bootstrap_gaps_advice[notnull];  -> ``missing='mean'`` * (was not
                      offered: the bootstrap took no missing=)   T bootstrap_gaps_advice[missing]
  resampling checked * inf -> core's INFINITE_ADVICE, ``da.where(np.isfinite(da))`` +
                      missing='mean' (was "Replace or drop those features": no call)
                      T bootstrap_infinite_values_advice_makes_them_nan_then_means
genomics/ (scaling.py is another session's: C test_trust_genomics_round3.py, dim= and
founders=False)
  projection 272, 277, 283   uncentered / another sample dim / another variant dim ->
                      ``center=True``, ``dim=``, rename   T uncentered_pca_projection_advice_..,
                      projection_dims_advice
  projection 387 *    variants missing -> ``common = np.intersect1d(...)``, PCA on
                      ``kept.sel(variants=common)`` (``common`` was not said; the dim was
                      always 'variants')   T missing_variants_advice_runs_the_pca_on_the_..
  projection 393 *    duplicate variant ids -> ``new.drop_duplicates('variants')`` (was "drop
                      the duplicates first")   T duplicate_variant_ids_advice_keeps_one_of_each
  projection 292, 408 shrinkage with oadp / other alleles -> leave it out or lzw; drop them
                      from both   T oadp_with_shrinkage_advice, other_alleles_advice_..;
                      98, 267, 300-333 D
  packing 48, plink 408   another sample dim -> ``dim=``   T genotype_writers_dim_advice
  plink2 74, 200      no sample ids / loadings of an uncentered PCA ->
                      ``scores.assign_coords(samples=ids)``, ``loadings=None``
                      T scores_without_ids_advice_assigns_them, uncentered_pca_loadings_..
  plink2 219, 241, 246  OBS_CT unknown (warning) / other genotypes ->
                      ``write_plink_pca(res, prefix, genotypes=kept)``
                      T afreq_without_observation_counts_advice_..,
                      eigenvec_allele_of_other_genotypes_advice_passes_the_pca_ones
  plink2 301, 313     variant ids missing / duplicated -> ``plink2 --set-...-var-ids``   N
  twstats 349, 367    n_variants as text / k of the eigenvalues -> ``int(text)``,
                      ``xsvd.tracy_widom(xsvd.genomics.relationship_eigenvalues(kept, w,
                      missing='mean'))``   T tracy_widom_count_as_text_advice,
                      tracy_widom_of_k_components_advice_tests_every_eigenvalue
  twstats 517         missing calls -> missing="mean"
                      C test_trust_genomics_round3.py::test_relationship_eigenvalues_are_..
  twstats 119, pgen 92   SciPy / pgenlib missing -> pip install   N
  vcf 41              no such variable -> ``genotype=``
                      T dosage_of_another_variable_name_advice_passes_genotype
  tables 105, 109     duplicate sample ids -> own ids; ``isel``   D (xarray's isel)
  pgen 105-324, plink 179-352, tables 41-65  damaged or mismatched files -> the files
                      written together, ``plink2 --make-pgen``, ``zstd -d``   N
cli.py
  316, 322, 343 and the library advice in flags -> ``--dim time``, ``--k``, ``--missing
                      mean``   T cli_advice_in_flags;  307 -> ``--overwrite``
                      T cli_existing_output_advice_overwrites;  163 (VCF: plink2) N;
                      241-250 (coslat -> --weights VAR) T cli_coslat_without_a_latitude_..;
                      183, 289 (h5netcdf) N;  131, 209, 262, 270 D
io/
  store 81 write_store  path exists -> ``mode='w'``
                      T existing_store_advice_overwrites_with_mode_w
  zarr 141 pick_variable  several variables -> ``variable=``
                      T store_of_several_variables_advice_chooses_one
  zarr 332, 468/469 (missing chunks), store 119, 266-293, netcdf 45, results 156-297,
  parts 92, errors 39   damaged stores, versions, installs   N
plot/
  lines 120 timeseries  ax= and 3 components -> ``overlay=True``
                      T timeseries_on_one_axes_advice_overlays
  common 178 single_sample_dim  two sample dims -> ``da.stack(sample=(...))``, dim='sample'
                      T timeseries_of_two_sample_dims_advice_stacks_them
  maps 72, 90, 122-210, scatter 92, lines 114, common 53-168   D (allowed values);
  maps 50, common 53  matplotlib / cartopy missing   N
datasets/
  checks 52 maybe_chunk  chunks of an unknown dim -> its dims
                      T dataset_chunks_of_an_unknown_dim_advice_uses_its_dims
  checks 69 (dask missing) N; climate 116-272, genotypes 107 D (value ranges)
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr
from conftest import matrix_with_spectrum

import xsvd

# ----------------------------------------------------------------------------- helpers


def _code(message: str, contains: str) -> str:
    """The piece of code in backticks of ``message`` that contains ``contains``."""
    found = [c for c in re.findall(r"`([^`]+)`", message) if contains in c]
    assert found, f"no code with {contains!r} in the message: {message}"
    return found[0]


def _svals(x: np.ndarray, k: int | None = None) -> np.ndarray:
    s = np.linalg.svd(np.asarray(x, dtype=np.float64), compute_uv=False)
    return s if k is None else s[:k]


def _centered(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=0)


def _field(seed: int = 0, n_time: int = 30, lat=(-30.0, 0.0, 30.0, 60.0), n_lon: int = 5):
    """A (time, lat, lon) field with a few strong modes and coordinates on every dim."""
    rng = np.random.default_rng(seed)
    n = len(lat) * n_lon
    modes = rng.standard_normal((n_time, 3)) * [5.0, 3.0, 2.0]
    x = modes @ rng.standard_normal((3, n)) + 0.3 * rng.standard_normal((n_time, n))
    return xr.DataArray(
        (x + 10.0).reshape(n_time, len(lat), n_lon),
        dims=("time", "lat", "lon"),
        coords={"time": np.arange(n_time), "lat": np.asarray(lat), "lon": np.arange(float(n_lon))},
        name="sst",
    )


def _matrix(da: xr.DataArray, sample: str = "time") -> np.ndarray:
    rest = [d for d in da.dims if d != sample]
    return da.transpose(sample, *rest).values.reshape(da.sizes[sample], -1)


def _on(backend, da: xr.DataArray) -> xr.DataArray:
    """``da`` with its (2-D view of the) data on ``backend``, same dims and coords."""
    m = da.values.reshape(da.shape[0], -1)
    data = backend(m)
    if da.ndim != 2:
        if backend.name == "strict":
            import array_api_strict

            data = array_api_strict.reshape(data, da.shape)
        else:
            data = data.reshape(da.shape)
    return da.copy(data=data)


def _host(backend, x):
    return backend.host(x.data if isinstance(x, xr.DataArray) else x)


def _scores(da: xr.DataArray, res, new: np.ndarray, center: bool = True) -> np.ndarray:
    """Scores of the rows ``new`` on the unweighted decomposition of ``da``, by hand."""
    x = _matrix(da)
    mean = x.mean(axis=0) if center else 0.0
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    k = res.k
    return (new - mean) @ vt[:k].T / s[:k]


def _same_up_to_sign(got: np.ndarray, want: np.ndarray, **tol) -> None:
    """Columns equal up to their sign."""
    signs = np.sign(np.sum(got * want, axis=0))
    np.testing.assert_allclose(got * signs, want, **tol)


# ------------------------------------------------- labeled/layout.py: what is decomposed


def test_plain_array_advice_wraps_it(backend):
    """layout.py: a NumPy array is refused; `xr.DataArray(array, dims=(...))` decomposes it."""
    x = _matrix(_field())
    array = backend(x)
    with pytest.raises(TypeError) as err:
        xsvd.svd(array, k=3)
    code = _code(str(err.value), "xr.DataArray").replace("(...)", "('time', 'cell')")
    da = eval(code, {"xr": xr, "array": array})
    res = da.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


def test_dataset_advice_picks_the_variable():
    """layout.py: a Dataset is refused by xsvd.svd; `ds['sst']` is the field's SVD."""
    ds = _field().to_dataset()
    with pytest.raises(TypeError) as err:
        xsvd.svd(ds, k=3, dim="time", center=True)
    da = eval(_code(str(err.value), "ds["), {"ds": ds})
    res = xsvd.svd(da, k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(ds["sst"])), 3), rtol=1e-8)


@pytest.mark.parametrize("dim", [[], "t"])
def test_dim_naming_no_dimension_advice_lists_them(backend, dim):
    """layout.py: dim=[] and an unknown dim are refused with the dims; one of them works."""
    da = _on(backend, _field())
    with pytest.raises(ValueError, match=r"\('time', 'lat', 'lon'\)") as err:
        da.svd(k=3, dim=dim, center=True)
    assert "dim" in str(err.value)
    res = da.svd(k=3, dim="time", center=True)  # "one or more of them as dim="
    want = _svals(_centered(_matrix(_field())), 3)
    np.testing.assert_allclose(_host(backend, res.S), want, rtol=1e-8)


def test_every_dim_as_samples_advice_leaves_one_out(backend):
    """layout.py: "Leave at least one dimension out of `dim`": the rest are the features."""
    da = _on(backend, _field())
    with pytest.raises(ValueError, match="Leave at least one dimension out"):
        da.svd(k=3, dim=("time", "lat", "lon"))
    res = da.svd(k=3, dim=("time", "lat"), center=True)
    x = _field().values.reshape(-1, 5)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


def test_component_dim_advice_renames_it(backend):
    """layout.py: a dim named 'component' is refused; the advised rename decomposes it."""
    field = _field().rename(lon="component")
    da = _on(backend, field)
    with pytest.raises(ValueError) as err:
        da.svd(k=3, dim="time", center=True)
    renamed = eval(_code(str(err.value), "rename"), {"da": da})
    res = renamed.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(
        _host(backend, res.S), _svals(_centered(_matrix(field)), 3), rtol=1e-8
    )
    assert "mode" in res.V.dims


def _levels():
    field = _field(3)
    return xr.concat([field, 2.0 * field + 1.0], dim=xr.DataArray([500.0, 850.0], dims="level"))


@pytest.mark.parametrize("new_at", ["a label the new data lack", "a scalar coordinate"])
def test_single_level_advice_selects_it_where_the_data_hold_it(new_at):
    """layout.py: a result of the single level 850, and new data at 500 only: the advice
    selects 850 from the data that hold it (it named `.sel(level=850.0)` on the new data,
    which lack it), and the scores are those of the level-850 rows."""
    data = _levels()
    decomposed = data.sel(level=[850.0])
    res = decomposed.svd(k=3, dim="time", center=True)
    new = data.sel(level=[500.0]) if new_at.startswith("a label") else data.sel(level=500.0)
    with pytest.raises(ValueError, match="single 'level' 850") as err:
        res.project(new)
    chosen = eval(_code(str(err.value), ".sel("), {"data": data})
    scores = res.project(chosen)
    want = _scores(decomposed.squeeze("level", drop=True), res, _matrix(decomposed))
    _same_up_to_sign(scores.values, res.U.values, atol=1e-10)
    np.testing.assert_allclose(np.abs(scores.values), np.abs(want), atol=1e-10)


def test_other_feature_count_advice_selects_the_decomposed_features():
    """layout.py: new data over more longitudes; the advised `.sel` of the result's
    features gives the scores of the decomposed features."""
    field = _field()
    res = field.isel(lon=slice(0, 4)).svd(k=3, dim="time", center=True)
    with pytest.raises(ValueError, match="has size 5 in the new data but 4") as err:
        res.project(field)
    chosen = eval(_code(str(err.value), ".sel("), {"new": field, "res": res})
    np.testing.assert_allclose(res.project(chosen), res.U, atol=1e-10)


def test_other_coordinate_advice_reindexes_like_the_result():
    """layout.py: new data with the longitudes in another order; the advised reindex gives
    the scores of the decomposed data (the same rows)."""
    field = _field()
    res = field.svd(k=3, dim="time", center=True)
    new = field.isel(lon=slice(None, None, -1))
    with pytest.raises(ValueError, match="coordinate 'lon' of the new data differs") as err:
        res.project(new)
    chosen = eval(_code(str(err.value), "reindex_like"), {"new": new, "res": res})
    np.testing.assert_allclose(res.project(chosen), res.U, atol=1e-10)


# --------------------------------------------------- labeled/dims.py: which dim is samples


def test_ambiguous_sample_dim_advice_names_one():
    """dims.py: 3-D data without a time dim; the advised dim= decomposes along it."""
    field = _field().rename(time="run")
    with pytest.raises(ValueError, match="ambiguous") as err:
        field.svd(k=3, center=True)
    dim = re.search(r"e\.g\. dim=('\w+')", str(err.value)).group(1)
    res = field.svd(k=3, center=True, dim=eval(dim))
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(field, "run")), 3), rtol=1e-8)


def test_time_not_first_advice_passes_dim_time():
    """dims.py: time is not the first of three dims; `dim='time'` gives the EOFs."""
    field = _field().transpose("lat", "time", "lon")
    with pytest.raises(ValueError, match="Pass dim='time'") as err:
        field.svd(k=3, center=True)
    res = field.svd(k=3, center=True, dim=eval(re.search(r"Pass dim=('\w+')", str(err.value))[1]))
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(_field())), 3), rtol=1e-8)


def _land(field: xr.DataArray) -> xr.DataArray:
    return field.where(~((field.lat == 60.0) & (field.lon >= 3.0)))


def test_swapped_dims_advice_passes_the_time_dim():
    """dims.py: time as a feature, land NaN: `dim='time'` leaves the land cells out."""
    field = _land(_field())
    with pytest.raises(xsvd.MissingValueError, match="swapped") as err:
        field.svd(k=3, dim=("lat", "lon"), center=True)
    dim = eval(re.search(r"pass dim=('\w+')", str(err.value))[1])
    res = field.svd(k=3, dim=dim, center=True)
    x = _matrix(field)
    np.testing.assert_allclose(res.S, _svals(_centered(x[:, ~np.isnan(x).any(0)]), 3), rtol=1e-8)


def test_all_nan_samples_advice_drops_them():
    """dims.py: land cells as samples (no time-like dim); the advised dropna decomposes the
    ocean cells."""
    field = _land(_field()).rename(time="step").stack(cell=("lat", "lon")).transpose("cell", "step")
    field = field.reset_index("cell")
    with pytest.raises(xsvd.MissingValueError, match="swapped") as err:
        field.svd(k=3, dim="cell", center=True)
    kept = eval(_code(str(err.value), "dropna"), {"da": field})
    res = kept.svd(k=3, dim="cell", center=True)
    x = field.values
    np.testing.assert_allclose(res.S, _svals(_centered(x[~np.isnan(x).all(1)]), 3), rtol=1e-8)


# ------------------------------------------------ core/common.py, core/backend.py, base.py


def test_single_sample_advice_center_false(backend):
    """common.py: center=True on one sample; center=False decomposes that row."""
    x = _matrix(_field())[:1]
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="or pass center=False"):
        da.svd.exact(dim="time", center=True)
    res = da.svd.exact(dim="time", center=False)
    np.testing.assert_allclose(_host(backend, res.S), [np.linalg.norm(x)], rtol=1e-10)


def _seeded(code: str) -> str:
    """The advised call ``code`` (ending in ``)``) with a fixed start block: ``seed=0``."""
    return code[:-1] + ", seed=0)"


def test_compressed_without_k_advice_passes_k(backend):
    """common.py: method='compressed' without k; the advised `.svd.compressed(k=10)` runs and
    gives the leading singular values."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="pass `k=`") as err:
        da.svd(method="compressed", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k=10 of 20: the exact SVD would be cheaper
        res = eval("da" + _seeded(_code(str(err.value), "compressed(k=")), {"da": da})
    np.testing.assert_allclose(_host(backend, res.S), _svals(x, 10), rtol=1e-6)


def test_k_out_of_range_advice_takes_the_largest():
    """common.py: k above min(m, n); the k the message names as the largest works."""
    x = _matrix(_field())
    da = xr.DataArray(x, dims=("time", "cell"))
    with pytest.raises(ValueError, match="between 1 and 20") as err:
        da.svd(k=50, dim="time", center=True)
    k = int(re.search(r"between 1 and (\d+)", str(err.value))[1])
    res = da.svd(k=k, dim="time", center=True)
    np.testing.assert_allclose(res.S[:-1], _svals(_centered(x))[:-1], rtol=1e-8)


def test_non_numeric_data_advice_converts_them(backend):
    """backend.py: numbers stored as text; the advised `da.astype('float64')` decomposes them."""
    x = np.round(_matrix(_field()), 3)
    da = xr.DataArray(x.astype(str), dims=("time", "cell"))
    with pytest.raises(TypeError, match="numeric") as err:
        da.svd(k=3, dim="time", center=True)
    converted = eval(_code(str(err.value), "astype"), {"da": da})
    converted = converted.copy(data=backend(converted.values))
    res = converted.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


def test_boolean_k_advice_omits_it():
    """base.py: reconstruct(k=True) is refused; omitted, all components rebuild the data."""
    field = _field()
    res = field.svd.exact(dim="time", center=True)
    with pytest.raises(TypeError, match="omit it for all 20"):
        res.reconstruct(True)
    np.testing.assert_allclose(res.reconstruct(), field, rtol=1e-10)


# ------------------------------------------------------ labeled/result.py: project()


def _gappy(field: xr.DataArray) -> tuple[xr.DataArray, np.ndarray]:
    """``field`` with two values NaN, and the rows filled with the field's feature means."""
    new = field.copy()
    new[2, 1, 1] = np.nan
    new[5, 0, 3] = np.nan
    x = _matrix(new)
    filled = np.where(np.isnan(x), _matrix(field).mean(axis=0), x)
    return new, filled


@pytest.mark.parametrize("missing", ["zero", "fill"])
def test_unknown_missing_advice_takes_the_feature_means(backend, missing):
    """result.py: missing='zero' is refused; `missing='mean'` scores the gaps as the means."""
    field = _field()
    res = _on(backend, field).svd.exact(dim="time", center=True)
    new, filled = _gappy(field)
    with pytest.raises(ValueError) as err:
        res.project(_on(backend, new), missing=missing)
    option = eval("dict(" + _code(str(err.value), "missing=") + ")")
    scores = res.project(_on(backend, new), **option)
    _same_up_to_sign(_host(backend, scores), _scores(field, res, filled), atol=1e-10)


def test_missing_mean_of_an_uncentered_result_advice_centers():
    """result.py: project(missing='mean') on an uncentered result; decomposing with
    `center=True` gives the scores of the gaps at the means."""
    field = _field()
    res = field.svd.exact(dim="time", center=False)
    new, filled = _gappy(field)
    with pytest.raises(ValueError, match="`center=True`") as err:
        res.project(new, missing="mean")
    assert "new.fillna" in str(err.value)
    centered = field.svd.exact(dim="time", center=True)
    _same_up_to_sign(
        centered.project(new, missing="mean").values, _scores(field, centered, filled), atol=1e-10
    )
    # the other advice: fill the new data first (here with the decomposed data's means)
    value = field.mean("time")
    scores = res.project(eval(_code(str(err.value), "fillna"), {"new": new, "value": value}))
    _same_up_to_sign(scores.values, _scores(field, res, filled, center=False), atol=1e-10)


@pytest.mark.parametrize("follow", ["missing", "interpolate"])
def test_nan_in_new_data_advice(backend, follow):
    """result.py: NaN in new data at ocean features; `missing='mean'` scores them as the
    means, `new.interpolate_na(dim)` as the interpolated values (land stays out). It said
    "Fill or drop them", with no call."""
    field = _land(_field())
    x = _matrix(field)
    ocean = ~np.isnan(x).any(axis=0)
    res = _on(backend, field).svd.exact(dim="time", center=True)
    new = field.copy()
    new[4, 1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN at features") as err:
        res.project(_on(backend, new)).compute()  # lazy data: raised when computed
    message = str(err.value)
    if follow == "missing":
        option = eval("dict(" + _code(message, "missing=") + ")")
        scores = res.project(_on(backend, new), **option)
        rows = np.where(np.isnan(_matrix(new)), np.nanmean(x, axis=0), _matrix(new))
    else:
        filled = eval(_code(message, "interpolate_na"), {"new": new, "dim": "time"})
        scores = res.project(_on(backend, filled))
        rows = _matrix(filled)
    mean = x[:, ocean].mean(axis=0)
    _, s, vt = np.linalg.svd(x[:, ocean] - mean, full_matrices=False)
    want = (rows[:, ocean] - mean) @ vt[:5].T / s[:5]
    _same_up_to_sign(_host(backend, scores)[:, :5], want, atol=1e-10)


def test_lazy_data_on_a_device_result_advice(backend):
    """result.py: lazily chunked data projected on a result on the (strict) device: both
    advised ways, `other.compute()` and `res.as_numpy()`, give the scores."""
    if backend.name != "strict":
        pytest.skip("the message is about a result on a device other than CuPy")
    import dask.array as da_

    field = _field()
    x = _matrix(field)
    res = xr.DataArray(backend(x), dims=("time", "cell")).svd.exact(dim="time", center=True)
    other = xr.DataArray(da_.from_array(x, chunks=(10, -1)), dims=("time", "cell"))
    with pytest.raises(TypeError, match="Dask cannot hold") as err:
        res.project(other)
    want = _scores(field, res, x)
    computed = eval(_code(str(err.value), "compute"), {"other": other})
    _same_up_to_sign(_host(backend, res.project(computed)), want, atol=1e-10)
    host = eval(_code(str(err.value), "as_numpy"), {"res": res})
    _same_up_to_sign(backend.host(host.project(other).data), want, atol=1e-10)


# -------------------------------------------------- labeled/statistics.py: statistics


def test_ddof_advice_of_a_single_sample():
    """statistics.py: eigenvalues of one uncentered sample with the default ddof=1; the
    advised ddof=0 gives S**2 (it said "ddof=0 or 1", and 1 fails the same way)."""
    x = _matrix(_field())[:1]
    res = xr.DataArray(x, dims=("time", "cell")).svd.exact(dim="time")
    with pytest.raises(ValueError, match="Use ddof=0") as err:
        res.eigenvalues()
    ddof = int(re.search(r"Use ddof=(\d)", str(err.value))[1])
    assert "or 1" not in str(err.value)
    np.testing.assert_allclose(res.eigenvalues(ddof=ddof), [np.sum(x**2)], rtol=1e-10)


def _corr(data: np.ndarray, pcs: np.ndarray) -> np.ndarray:
    """Correlation of every column of ``data`` with every column of ``pcs`` (features x k)."""
    a = _centered(data) / data.std(axis=0)
    b = _centered(pcs) / pcs.std(axis=0)
    return a.T @ b / len(data)


def test_data_over_fewer_samples_advice_decomposes_their_period():
    """statistics.py: correlation maps of data over 20 of the decomposition's 30 times; the
    advice to decompose the samples the data cover gives their maps. It advised
    `data.sel(time=res.U['time'])`, a KeyError: the data lack those labels."""
    da = _field()
    res = da.svd.exact(dim="time", center=True)
    data = 2.0 * da.isel(time=slice(0, 20)) + 1.0
    with pytest.raises(ValueError, match="do not cover") as err:
        res.correlation_maps(data)
    code = _code(str(err.value), ".svd(").replace("...", "dim='time', center=True")
    again = eval(code, {"da": da, "data": data})
    maps = again.correlation_maps(data).isel(component=slice(0, 5))
    want = _corr(_matrix(data), again.U.values[:, :5])
    np.testing.assert_allclose(maps.stack(cell=("lat", "lon")).values.T, want, atol=1e-10)


def test_data_of_other_sample_count_without_labels_advice():
    """statistics.py: no sample labels and 40 samples for a decomposition of 30; the advised
    `isel` (it said "Select the same samples") gives the maps of the first 30."""
    da = _field().drop_vars("time")
    res = da.svd.exact(dim="time", center=True)
    more = xr.concat([da, da.isel(time=slice(0, 10))], dim="time")
    with pytest.raises(ValueError, match="40 samples") as err:
        res.correlation_maps(more)
    data = eval(_code(str(err.value), "isel"), {"data": more})
    maps = res.correlation_maps(data)
    want = _corr(_matrix(da), res.U.values)
    np.testing.assert_allclose(maps.stack(cell=("lat", "lon")).values.T, want, atol=1e-10)


def test_component_dim_in_statistics_data_advice_renames_it():
    """statistics.py: data with a 'component' dim; the advised rename gives the maps."""
    da = _field()
    res = da.svd.exact(dim="time", center=True)
    data = da.rename(lon="component")
    with pytest.raises(ValueError, match="Rename it first") as err:
        res.correlation_maps(data)
    maps = res.correlation_maps(eval(_code(str(err.value), "rename"), {"data": data}))
    want = _corr(_matrix(da), res.U.values)
    np.testing.assert_allclose(maps.stack(cell=("lat", "mode")).values.T, want, atol=1e-10)


# ----------------------------------------------- climate/multivariate.py: Dataset.svd


def _pair(seed: int = 5):
    """Two fields over the same 30 times: sst (time, lat, lon) and slp (time, x)."""
    sst = _field(seed)
    rng = np.random.default_rng(seed + 1)
    slp = xr.DataArray(
        rng.standard_normal((30, 3)) @ rng.standard_normal((3, 6)) + 3.0,
        dims=("time", "x"),
        coords={"time": np.arange(30)},
        name="slp",
    )
    return sst, slp


def _joint(*fields) -> np.ndarray:
    return np.hstack([_centered(_matrix(f)) for f in fields])


def test_dataarray_to_the_multivariate_svd_advice_uses_da_svd():
    """multivariate.py: one DataArray to the multivariate SVD; `da.svd(...)` decomposes it."""
    from xsvd.climate import multivariate

    da, _ = _pair()
    with pytest.raises(TypeError) as err:
        multivariate.svd(da, 3, dim="time", center=True)
    code = _code(str(err.value), "da.svd").replace("...", "k=3, dim='time', center=True")
    res = eval(code, {"da": da})
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(da)), 3), rtol=1e-8)


def test_variables_with_other_default_dims_advice_passes_dim():
    """multivariate.py: the variables' default sample dims differ; the advised dim= (the one
    they share) gives the joint SVD."""
    sst, slp = _pair()
    ds = xr.Dataset({"sst": sst.transpose("lat", "time", "lon"), "slp": slp})
    with pytest.raises(ValueError) as err:
        ds.svd(k=3, center=True)
    dim = eval(re.findall(r"dim=('\w+')", str(err.value))[0])
    res = ds.svd(k=3, center=True, dim=dim)
    np.testing.assert_allclose(res.S, _svals(_joint(sst, slp), 3), rtol=1e-8)


@pytest.mark.parametrize("extra", ["no sample dim", "no feature dim"])
def test_variable_without_a_dim_advice_drops_it(backend, extra):
    """multivariate.py: a variable lacking the sample or the feature dims; the advised
    `ds.drop_vars(...)` decomposes the others."""
    sst, slp = _pair()
    other = (
        xr.DataArray(np.ones(3), dims="z")
        if extra == "no sample dim"
        else xr.DataArray(np.arange(30.0), dims="time")
    )
    ds = xr.Dataset({"slp": slp.copy(data=backend(slp.values)), "bad": other})
    with pytest.raises(ValueError, match="'bad'") as err:
        ds.svd(k=3, dim="time", center=True)
    kept = eval(_code(str(err.value), "drop_vars"), {"ds": ds})
    res = kept.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_joint(slp), 3), rtol=1e-8)


def test_variable_without_features_advice_gives_it_one():
    """multivariate.py: a time series as a variable; the advised `expand_dims('point')`
    makes it one feature of the joint SVD."""
    sst, _ = _pair()
    series = xr.DataArray(np.sin(np.arange(30.0)) * 4.0, dims="time")
    ds = xr.Dataset({"sst": sst, "nino": series})
    with pytest.raises(ValueError, match="no features") as err:
        ds.svd(k=3, dim="time", center=True)
    code = _code(str(err.value), "expand_dims")
    ds["nino"] = eval(code, {"ds": ds})
    res = ds.svd(k=3, dim="time", center=True)
    want = _svals(np.hstack([_joint(sst), _centered(series.values[:, None])]), 3)
    np.testing.assert_allclose(res.S, want, rtol=1e-8)


def test_weights_for_an_unknown_variable_advice_keys_them_by_name():
    """multivariate.py: weights keyed by a name that is not a variable; the advised
    `weights={'sst': xsvd.coslat_weights(ds['sst'])}` weights sst (slp: see the next)."""
    sst, slp = _pair()
    ds = xr.Dataset({"sst": sst})
    with pytest.raises(ValueError, match="Key the weights by variable name") as err:
        ds.svd(k=3, dim="time", center=True, weights={"temperature": None})
    weights = eval(_code(str(err.value), "weights=")[len("weights=") :], {"xsvd": xsvd, "ds": ds})
    res = ds.svd(k=3, dim="time", center=True, weights=weights)
    w = np.repeat(np.sqrt(np.cos(np.deg2rad(sst.lat.values))), 5)
    np.testing.assert_allclose(res.S, _svals(_joint(sst) * w, 3), rtol=1e-8)


def test_weights_lacking_a_variable_advice_gives_it_none():
    """multivariate.py: weights for sst only; `weights={**weights, 'slp': None}` leaves slp
    unweighted beside the weighted sst."""
    sst, slp = _pair()
    ds = xr.Dataset({"sst": sst, "slp": slp})
    weights = {"sst": xsvd.coslat_weights(sst)}
    with pytest.raises(ValueError, match="no entry for the variable 'slp'") as err:
        ds.svd(k=3, dim="time", center=True, weights=weights)
    fixed = eval(_code(str(err.value), "**weights")[len("weights=") :], {"weights": weights})
    res = ds.svd(k=3, dim="time", center=True, weights=fixed)
    w = np.repeat(np.sqrt(np.cos(np.deg2rad(sst.lat.values))), 5)
    np.testing.assert_allclose(
        res.S, _svals(np.hstack([_joint(sst) * w, _joint(slp)]), 3), rtol=1e-8
    )


def test_dataset_of_coordinates_only_advice_makes_them_variables():
    """multivariate.py: a Dataset with coordinates only; the advised
    `xr.Dataset({'sst': sst, 'slp': slp})` is the joint SVD."""
    sst, slp = _pair()
    empty = xr.Dataset(coords={"sst": sst, "slp": slp})
    with pytest.raises(ValueError, match="no data variables") as err:
        empty.svd(k=3, dim="time", center=True)
    ds = eval(_code(str(err.value), "xr.Dataset"), {"xr": xr, "sst": sst, "slp": slp})
    res = ds.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S, _svals(_joint(sst, slp), 3), rtol=1e-8)


@pytest.mark.parametrize("follow", ["select", "drop"])
def test_text_variable_advice_selects_the_fields(follow):
    """multivariate.py: a variable of text; selecting the fields (`ds[[...]]`) or dropping it
    gives the joint SVD of the numbers."""
    sst, slp = _pair()
    labels = xr.DataArray(np.array([["a", "b"]] * 30), dims=("time", "q"))
    ds = xr.Dataset({"sst": sst, "slp": slp, "station": labels})
    with pytest.raises(TypeError, match="not numbers") as err:
        ds.svd(k=3, dim="time", center=True)
    kept = eval(_code(str(err.value), "ds[" if follow == "select" else "drop_vars"), {"ds": ds})
    res = kept.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S, _svals(_joint(sst, slp), 3), rtol=1e-8)


def test_same_named_feature_dims_advice_renames_one():
    """multivariate.py: two fields with a 'lat' dim on other grids; the advised rename lets
    each keep its grid."""
    from xsvd.climate import multivariate

    rng = np.random.default_rng(8)
    a = xr.DataArray(
        rng.standard_normal((30, 4)), dims=("time", "lat"), coords={"lat": [0.0, 1, 2, 3]}
    )
    b = xr.DataArray(
        rng.standard_normal((30, 3)), dims=("time", "lat"), coords={"lat": [0.0, 2, 4]}
    )
    with pytest.raises(ValueError, match="Rename one") as err:
        multivariate.svd({"a": a, "b": b}, 3, dim="time", center=True)
    b = eval(_code(str(err.value), "rename"), {"a": a, "b": b})
    res = multivariate.svd({"a": a, "b": b}, 3, dim="time", center=True)
    np.testing.assert_allclose(res.S, _svals(_joint(a, b), 3), rtol=1e-8)


# ------------------------------------------------------ climate/rotation.py: rotate()


def _rank(x: np.ndarray, k: int) -> np.ndarray:
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return (u[:, :k] * s[:k]) @ vt[:k]


def _rotated_truth(field: xr.DataArray, rotated, n: int) -> None:
    """The n rotated components rebuild the rank-n approximation of the anomalies."""
    x = _matrix(field)
    got = _matrix(rotated.reconstruct(n)) - x.mean(axis=0)
    np.testing.assert_allclose(got, _rank(_centered(x), n), atol=1e-9)


def test_power_with_varimax_advice(backend):
    """rotation.py: power= with varimax; method='promax', or leaving power out, rotates."""
    field = _field(6)
    res = _on(backend, field).svd.exact(dim="time", center=True)
    with pytest.raises(ValueError, match="Pass method='promax' or leave out power"):
        res.rotate(3, power=3)
    _rotated_truth(field, res.rotate(3, method="promax", power=3).as_numpy(), 3)
    _rotated_truth(field, res.rotate(3).as_numpy(), 3)


def test_rotating_one_component_advice_takes_two(backend):
    """rotation.py: n=1 is refused ("between 2 and k"); n=2 rotates the first two."""
    field = _field(6)
    res = _on(backend, field).svd.exact(dim="time", center=True)
    with pytest.raises(ValueError, match=r"between 2 and \d+") as err:
        res.rotate(1)
    n = int(re.search(r"between (\d+) and", str(err.value))[1])
    _rotated_truth(field, res.rotate(n).as_numpy(), n)


def test_unconverged_varimax_advice_passes_a_larger_max_iter():
    """rotation.py: max_iter=2 warns; a larger max_iter is silent and the default's rotation."""
    field = _field(6)
    res = field.svd.exact(dim="time", center=True)
    with pytest.warns(RuntimeWarning, match="Pass a larger max_iter"):
        res.rotate(5, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rotated = res.rotate(5, max_iter=200)
    np.testing.assert_allclose(rotated.V, res.rotate(5).V, atol=1e-10)
    _rotated_truth(field, rotated, 5)
    loadings = rotated.V.values.reshape(-1, 5)  # varimax: more variance of squared loadings
    before = res.V.values.reshape(-1, 20)[:, :5]
    assert (loadings**2).var(axis=0).sum() > (before**2).var(axis=0).sum()


def test_reconstruct_with_fewer_rotated_components_advice():
    """rotation.py: reconstruct(2) of 3 rotated components; the advised
    `res.unrotated.reconstruct(2)` is the rank-2 approximation."""
    field = _field(6)
    rotated = field.svd.exact(dim="time", center=True).rotate(3)
    with pytest.raises(ValueError, match="unrotated") as err:
        rotated.reconstruct(2)
    rebuilt = eval(_code(str(err.value), "unrotated"), {"res": rotated})
    x = _matrix(field)
    np.testing.assert_allclose(_matrix(rebuilt) - x.mean(0), _rank(_centered(x), 2), atol=1e-9)


# ------------------------------------------------------ climate/weights.py: coslat


def _coslat(lat) -> np.ndarray:
    return np.sqrt(np.cos(np.deg2rad(np.asarray(lat, dtype=float))))


@pytest.mark.parametrize("given", [True, False])
def test_coslat_without_a_known_latitude_advice_names_it(given):
    """weights.py: a latitude coordinate the rules do not know (or lat= naming none): the
    advised lat= gives sqrt(cos(latitude)), and the weighted SVD."""
    field = _field().rename(lat="phi")
    field.name = None
    with pytest.raises(ValueError, match="lat=") as err:
        xsvd.coslat_weights(field, lat="latitude") if given else xsvd.coslat_weights(field)
    assert "None" not in str(err.value)  # it said "of None" for data without a name
    w = xsvd.coslat_weights(field, lat="phi")
    np.testing.assert_allclose(w, _coslat(field.phi), rtol=1e-12)
    res = field.svd(k=3, dim="time", center=True, weights=w)
    x = _centered(_matrix(field)) * np.repeat(_coslat(field.phi), 5)
    np.testing.assert_allclose(res.S, _svals(x, 3), rtol=1e-8)


def test_latitude_along_the_samples_advice_decomposes_along_time():
    """weights.py: dim='lat' puts the latitudes among the samples; decomposing along time
    (the advice) gives the weights of the grid cells."""
    field = _field()
    with pytest.raises(ValueError, match="e.g. time"):
        xsvd.coslat_weights(field, dim="lat")
    w = xsvd.coslat_weights(field, dim="time")
    res = field.svd(k=3, dim="time", center=True, weights=w)
    x = _centered(_matrix(field)) * np.repeat(_coslat(field.lat), 5)
    np.testing.assert_allclose(res.S, _svals(x, 3), rtol=1e-8)


# --------------------------------------------------------------- labeled/units.py: pint


def _pint():
    pint = pytest.importorskip("pint", reason='needs pint: pip install "xsvd[units]"')
    pytest.importorskip("pint_xarray", reason='needs pint-xarray: pip install "xsvd[units]"')
    return pint


def test_unknown_units_attribute_with_quantified_weights_advice_quantifies():
    """units.py: quantified weights and a units attribute pint does not know; the advised
    `da.pint.quantify('K')` gives S in K times the weights' units."""
    pint = _pint()
    ureg = pint.get_application_registry()
    field = _field()
    field.attrs["units"] = "furlongz"  # not a unit pint knows
    w = xr.DataArray(_coslat(field.lat), dims="lat").pint.quantify("m")
    with pytest.raises(ValueError, match="not a unit pint knows") as err:
        field.svd(k=3, dim="time", center=True, weights=w)
    code = _code(str(err.value), "quantify")
    da = eval(code, {"da": field})
    res = da.svd(k=3, dim="time", center=True, weights=w)
    x = _centered(_matrix(field)) * np.repeat(_coslat(field.lat), 5)
    np.testing.assert_allclose(res.S.pint.magnitude, _svals(x, 3), rtol=1e-8)
    assert res.S.pint.units == ureg.Unit("K * m")


def test_new_data_without_units_advice_quantifies_them():
    """units.py: a result of quantified data, plain new data; the advised
    `new.pint.quantify(...)` gives the scores of the data (here the decomposed rows)."""
    _pint()
    field = _field().assign_attrs(units="K")
    res = field.pint.quantify().svd(k=3, dim="time", center=True)
    new = field.copy()
    new.attrs = {}
    with pytest.raises(ValueError, match="no units") as err:
        res.project(new)
    scores = res.project(eval(_code(str(err.value), "quantify"), {"new": new}))
    np.testing.assert_allclose(scores, res.U, atol=1e-10)


def test_quantified_new_data_for_a_plain_result_advice_dequantifies_them():
    """units.py: a result of plain data, quantified new data (in mK); the advised
    `new.pint.dequantify()` converts them to the decomposed data's K by their attribute."""
    _pint()
    field = _field().assign_attrs(units="K")
    res = field.svd(k=3, dim="time", center=True)
    new = field.pint.quantify().pint.to("mK")
    with pytest.raises(ValueError, match="had no") as err:
        res.project(new)
    scores = res.project(eval(_code(str(err.value), "dequantify"), {"new": new}))
    np.testing.assert_allclose(scores, res.U, atol=1e-10)


# -------------------- core/missing.py (its NAN_ADVICE, INFINITE_ADVICE and option checks)


def _with_gaps(field: xr.DataArray) -> xr.DataArray:
    """``field`` with land (all-NaN cells) and two gaps at ocean cells."""
    out = _land(field)
    out[3, 1, 1] = np.nan
    out[7, 2, 4] = np.nan
    return out


def _mean_filled(da: xr.DataArray) -> np.ndarray:
    """The ocean columns of ``da``'s matrix, each gap at its column's mean."""
    x = _matrix(da)
    x = x[:, ~np.isnan(x).all(axis=0)]
    return np.where(np.isnan(x), np.nanmean(x, axis=0), x)


@pytest.mark.parametrize("given", ["missing='fill'", "negative_missing=True", "NaN"])
def test_missing_advice_takes_the_feature_means(backend, given):
    """missing.py: an unknown missing=, negative_missing=True with missing='error', and NaN
    at some samples: `missing='mean'` decomposes the gaps at their feature's mean."""
    field = _with_gaps(_field() + 100.0)  # no negative value: with negative_missing, missing
    da = _on(backend, field)
    kwargs = {"missing": "fill"} if given.startswith("missing") else {}
    if given.startswith("negative"):
        kwargs = {"negative_missing": True}
    with pytest.raises((ValueError, xsvd.MissingValueError), match="missing='mean'") as err:
        da.svd(k=3, dim="time", center=True, **kwargs).compute()
    assert "missing='mean'" in str(err.value)
    kwargs.pop("missing", None)
    res = da.svd(k=3, dim="time", center=True, missing="mean", **kwargs)
    x = _mean_filled(field)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


def test_nan_advice_interpolate_fills_the_gaps(backend):
    """missing.py: the advised `da.interpolate_na(dim)` fills the gaps; land stays out."""
    field = _with_gaps(_field())
    with pytest.raises(xsvd.MissingValueError) as err:
        _on(backend, field).svd(k=3, dim="time", center=True).compute()
    filled = eval(_code(str(err.value), "interpolate_na"), {"da": field, "dim": "time"})
    res = _on(backend, filled).svd(k=3, dim="time", center=True)
    x = _matrix(filled)
    x = x[:, ~np.isnan(x).all(axis=0)]
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


def test_nan_advice_leaves_the_gappy_features_out():
    """missing.py: NaN at some samples; the advised `da.where(da.notnull().all(dim))` leaves
    those features out as land (it advised `da.dropna(...)`, which names no call, and
    `da.dropna('time')` drops every sample where land is NaN)."""
    field = _with_gaps(_field())
    with pytest.raises(xsvd.MissingValueError) as err:
        field.svd(k=3, dim="time", center=True)
    code = _code(str(err.value), "notnull")
    res = eval(code, {"da": field, "dim": "time"}).svd(k=3, dim="time", center=True)
    x = _matrix(field)
    np.testing.assert_allclose(res.S, _svals(_centered(x[:, ~np.isnan(x).any(0)]), 3))


def test_infinite_values_advice_makes_them_nan_then_means(backend):
    """missing.py: inf in the data; `da.where(np.isfinite(da))` then `missing='mean'`."""
    field = _field()
    bad = field.copy()
    bad[3, 1, 1] = np.inf
    bad[9, 0, 0] = -np.inf
    with pytest.raises(xsvd.InfiniteValueError) as err:
        _on(backend, bad).svd(k=3, dim="time", center=True).compute()
    replaced = eval(_code(str(err.value), "isfinite"), {"da": bad, "np": np})
    res = _on(backend, replaced).svd(k=3, dim="time", center=True, missing="mean")
    np.testing.assert_allclose(
        _host(backend, res.S), _svals(_centered(_mean_filled(replaced)), 3), rtol=1e-8
    )


# ----------------------------------- labeled/preprocess.py, labeled/api.py (weights, method)


def test_weights_as_a_plain_array_advice_uses_coslat_weights(backend):
    """preprocess.py: NumPy weights are refused; the advised `xsvd.coslat_weights(da)`."""
    field = _field()
    da = _on(backend, field)
    with pytest.raises(TypeError, match="coslat_weights") as err:
        da.svd(k=3, dim="time", center=True, weights=np.ones(4))
    w = eval(_code(str(err.value), "coslat_weights"), {"xsvd": xsvd, "da": da})
    res = da.svd(k=3, dim="time", center=True, weights=w)
    x = _centered(_matrix(field)) * np.repeat(_coslat(field.lat), 5)
    np.testing.assert_allclose(_host(backend, res.S), _svals(x, 3), rtol=1e-8)


@pytest.mark.parametrize("follow", ["reindex", "assign_coords"])
def test_weights_on_other_labels_advice(follow):
    """preprocess.py: weights on latitudes that differ by rounding; `w.assign_coords(...)`
    puts them on the data's labels; `w.reindex(...)` leaves the unmatched latitude out
    (NaN weight: refused) unless the labels match, so it is followed on matching labels."""
    field = _field()
    values = np.array([0.5, 1.0, 1.5, 2.0])
    w = xr.DataArray(values, dims="lat", coords={"lat": field.lat.values + [1e-9, 0, 0, 0]})
    with pytest.raises(ValueError, match="does not match the data's") as err:
        field.svd(k=3, dim="time", center=True, weights=w)
    code = _code(str(err.value), follow)
    if follow == "reindex":  # for weights over more latitudes than the data
        w = xr.DataArray(
            np.r_[values, 9.0], dims="lat", coords={"lat": np.r_[field.lat.values, 89.0]}
        )
    fixed = eval(code, {"w": w, "da": field})
    res = field.svd(k=3, dim="time", center=True, weights=fixed)
    x = _centered(_matrix(field)) * np.repeat(values, 5)
    np.testing.assert_allclose(res.S, _svals(x, 3), rtol=1e-8)


def test_standardize_of_tiny_values_advice_scales_them_up():
    """preprocess.py: standard deviations whose reciprocals overflow; the advised
    `da * 1e300` gives the decomposition of the standardized data."""
    field = _field()
    tiny = field * 1e-312
    with pytest.raises(ValueError, match="Scale the data up first") as err:
        tiny.svd(k=3, dim="time", center=True, standardize=True)
    res = eval(_code(str(err.value), "1e300"), {"da": tiny}).svd(
        k=3, dim="time", center=True, standardize=True
    )
    x = _centered(_matrix(field))
    np.testing.assert_allclose(res.S, _svals(x / x.std(axis=0), 3), rtol=1e-6)


@pytest.mark.parametrize("follow", ["drop", "compressed"])
def test_compressed_options_for_the_exact_svd_advice(backend, follow):
    """api.py: n_power_iter with method='exact'; dropping it or `method='compressed'`."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="Drop it or pass `method='compressed'`"):
        da.svd(k=3, dim="time", center=True, method="exact", n_power_iter=4)
    if follow == "drop":
        res = da.svd(k=3, dim="time", center=True, method="exact")
    else:
        res = da.svd(k=3, dim="time", center=True, method="compressed", n_power_iter=4, seed=0)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-6)


@pytest.mark.parametrize("follow", ["k", pytest.param("exact", marks=pytest.mark.slow)])
def test_large_matrix_without_k_advice(follow):
    """api.py: both sides above 1,000 and no k; `da.svd(k=10)` or `method='exact'`."""
    s = np.r_[np.geomspace(100.0, 1.0, 12), np.full(8, 0.01)]
    x = matrix_with_spectrum(s, 1001, 1002, seed=9)  # rank 20: its singular values are s
    da = xr.DataArray(x, dims=("time", "cell"))
    with pytest.raises(ValueError, match="are large") as err:
        da.svd()  # refused before any read
    if follow == "k":
        res = eval(_seeded(_code(str(err.value), "svd(k=")), {"da": da})
    else:
        res = eval("da.svd(" + _code(str(err.value), "method=") + ")", {"da": da})
    np.testing.assert_allclose(res.S[:10], s[:10], rtol=1e-6)


# ------------------------------------------------------- core/options.py, solver, plan


def test_boolean_count_advice_passes_a_number(backend):
    """options.py: n_power_iter=True; the advised `n_power_iter=3` runs three passes."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(TypeError, match="pass a number") as err:
        da.svd(k=3, dim="time", center=True, method="compressed", n_power_iter=True)
    option = eval("dict(" + re.search(r"e\.g\. (n_power_iter=\d+)", str(err.value))[1] + ")")
    res = da.svd(k=3, dim="time", center=True, method="compressed", seed=0, **option)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-6)


@pytest.mark.parametrize("keep", ["n_power_iter", "tol"])
def test_n_power_iter_and_tol_advice_keeps_one(backend, keep):
    """options.py: n_power_iter and tol together; either one alone runs and converges."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="not both"):
        da.svd(k=3, dim="time", center=True, method="compressed", n_power_iter=4, tol=1e-6)
    option = {"n_power_iter": 4} if keep == "n_power_iter" else {"tol": 1e-6}
    res = da.svd(k=3, dim="time", center=True, method="compressed", seed=0, **option)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-6)


def test_tol_out_of_range_advice_takes_the_example(backend):
    """options.py: tol=2; the example `1e-3` runs: the estimated errors below it."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="between 0 and 1, e.g. 1e-3") as err:
        da.svd(k=3, dim="time", center=True, method="compressed", tol=2)
    tol = float(re.search(r"e\.g\. ([0-9.e-]+),", str(err.value))[1])
    res = da.svd(k=3, dim="time", center=True, method="compressed", seed=0, tol=tol)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=tol)


def test_tol_with_a_lazy_result_advice_computes(backend):
    """options.py: tol with compute=False; compute=True gives the converged values."""
    if not backend.lazy:
        pytest.skip("compute=False is about Dask data")
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="pass compute=True"):
        da.svd(k=3, dim="time", center=True, method="compressed", tol=1e-6, compute=False)
    res = da.svd(k=3, dim="time", center=True, method="compressed", tol=1e-6, compute=True, seed=0)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-6)


def test_max_passes_without_tol_advice_passes_tol(backend):
    """options.py: max_passes alone; with tol too it runs and converges."""
    x = _matrix(_field())
    da = xr.DataArray(backend(x), dims=("time", "cell"))
    with pytest.raises(ValueError, match="pass tol too"):
        da.svd(k=3, dim="time", center=True, method="compressed", max_passes=8)
    res = da.svd(k=3, dim="time", center=True, method="compressed", max_passes=8, tol=1e-6, seed=0)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-6)
    assert res.settings["passes"] <= 8


def test_rough_estimates_warning_advice_keeps_krylov():
    """solver.py: krylov=False warns that res.errors are not bounds; with the advised
    krylov=True and n_oversamples at the default they are (and the values are right)."""
    x = _matrix(_field())
    da = xr.DataArray(x, dims=("time", "cell"))
    with pytest.warns(RuntimeWarning, match="keep krylov=True"):
        da.svd(k=3, dim="time", center=True, method="compressed", krylov=False, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = da.svd(k=3, dim="time", center=True, method="compressed", krylov=True, seed=0)
    assert res.settings["krylov"] is True and res.settings["n_oversamples"] >= 10
    np.testing.assert_allclose(res.S, _svals(_centered(x), 3), rtol=1e-6)


def test_exact_is_cheaper_warning_advice_takes_the_exact_svd():
    """plan.py: k of a third of the short side warns before any read; the advised
    method='exact' gives the singular values."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((20000, 53))  # over 2**20 values: a size where it is said
    da = xr.DataArray(x, dims=("time", "cell"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # raised before any read
        with pytest.raises(UserWarning, match="method='exact'"):
            da.svd(k=18, dim="time", method="compressed")
        res = da.svd(k=18, dim="time", method="exact")
    np.testing.assert_allclose(res.S, _svals(x, 18), rtol=1e-10)


# ----------------------- climate/fields.py, mca.py, hilbert.py, analytic_field.py, extended.py


def _coupled(seed: int = 11):
    """Two fields over 40 times that share three modes: left (time, x), right (time, y)."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((40, 3)) * [3.0, 1.5, 0.7]
    left = common @ rng.standard_normal((3, 7)) + rng.standard_normal((40, 7))
    right = common @ rng.standard_normal((3, 5)) + rng.standard_normal((40, 5))
    coords = {"time": np.arange(40)}
    return (
        xr.DataArray(left, dims=("time", "x"), coords=coords),
        xr.DataArray(right, dims=("time", "y"), coords=coords),
    )


def _mca_truth(left: np.ndarray, right: np.ndarray, k: int) -> np.ndarray:
    return _svals(_centered(left).T @ _centered(right) / (len(left) - 1), k)


def test_mca_dtype_advice_converts_the_data(backend):
    """fields.py: mca(dtype='float32') is refused; the advised `da.astype('float32')` of
    both fields gives the MCA in float32."""
    left, right = _coupled()
    with pytest.raises(ValueError) as err:
        xsvd.mca(_on(backend, left), _on(backend, right), 3, dtype="float32")
    code = _code(str(err.value), "astype")
    if backend.name == "strict":  # its arrays take only its own dtypes, not names
        code = code.replace("'float32'", "array_api_strict.float32")
    scope = {"array_api_strict": pytest.importorskip("array_api_strict")}
    l32, r32 = (eval(code, {**scope, "da": _on(backend, f)}) for f in (left, right))
    assert "float32" in str(l32.dtype)
    res = xsvd.mca(l32, r32, 3, seed=0)
    got = _host(backend, res.singular_values)
    np.testing.assert_allclose(got, _mca_truth(left.values, right.values, 3), rtol=1e-4)


@pytest.mark.parametrize("follow", ["drop", "compressed"])
def test_mca_compressed_options_for_exact_advice(backend, follow):
    """fields.py: n_power_iter with method='exact'; drop it, or `method='compressed'`."""
    left, right = _coupled()
    fields = (_on(backend, left), _on(backend, right))
    with pytest.raises(ValueError, match="Drop it or pass `method='compressed'`"):
        xsvd.mca(*fields, 3, method="exact", n_power_iter=4)
    if follow == "drop":
        res = xsvd.mca(*fields, 3, method="exact")
    else:
        res = xsvd.mca(*fields, 3, method="compressed", n_power_iter=4, seed=0)
    want = _mca_truth(left.values, right.values, 3)
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-8)


def test_mca_krylov_false_advice_drops_it(backend):
    """fields.py: krylov=False is refused by mca(); dropped, the MCA is right."""
    left, right = _coupled()
    fields = (_on(backend, left), _on(backend, right))
    with pytest.raises(ValueError, match="Drop krylov=False"):
        xsvd.mca(*fields, 3, krylov=False)
    res = xsvd.mca(*fields, 3, seed=0)
    want = _mca_truth(left.values, right.values, 3)
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-8)


def test_mca_gaps_advice_interpolates(backend):
    """fields.py: NaN at some samples of the left field; the advised
    `da.interpolate_na(dim)` fills them, and the MCA is the filled fields'."""
    left, right = _coupled()
    gappy = left.copy()
    gappy[5, 2] = np.nan
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.mca(_on(backend, gappy), _on(backend, right), 3).compute()
    filled = eval(_code(str(err.value), "interpolate_na"), {"da": gappy, "dim": "time"})
    res = xsvd.mca(_on(backend, filled), _on(backend, right), 3, seed=0)
    want = _mca_truth(filled.values, right.values, 3)
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-8)


@pytest.mark.parametrize("given", ["NaN", "inf"])
@pytest.mark.parametrize("analysis", ["mca", "extended_eof"])
def test_mca_and_extended_gaps_advice_takes_the_means(backend, analysis, given):
    """fields.py: NaN at some samples (or inf) in mca's left field or extended_eof's field;
    the advised `missing='mean'` (after `da.where(np.isfinite(da))` for inf) gives the
    analysis of the field with each gap at its feature's mean (the analyses refused
    missing= before)."""
    left, right = _coupled()
    bad = left.copy()
    bad[5, 2] = np.nan if given == "NaN" else np.inf
    bad[17, 4] = np.nan if given == "NaN" else -np.inf
    if analysis == "mca":

        def run(da, **kw):
            return xsvd.mca(_on(backend, da), _on(backend, right), 3, seed=0, **kw)

    else:

        def run(da, **kw):
            return xsvd.extended_eof(_on(backend, da), 3, embedding=2, seed=0, **kw)

    error = xsvd.MissingValueError if given == "NaN" else xsvd.InfiniteValueError
    with pytest.raises(error) as err:
        run(bad)
    message = str(err.value)
    gappy = bad if given == "NaN" else eval(_code(message, "isfinite"), {"da": bad, "np": np})
    res = run(gappy, **eval("dict(" + _code(message, "missing=") + ")"))
    x = gappy.fillna(gappy.mean("time")).values
    if analysis == "mca":
        want = _mca_truth(x, right.values, 3)
    else:  # embedding 2, tau 1: each lagged column centered on its window
        want = _svals(_centered(np.hstack([x[:-1], x[1:]])), 3)
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-8)


def test_mca_fields_in_two_memories_advice_moves_them_to_the_host(backend):
    """fields.py: the left field on the device, the right on the host; the advised
    `left.as_numpy()` puts both on the host (CuPy: xarray's as_numpy copies to the host;
    array-api-strict's device refuses np.asarray, so xarray cannot there: reported)."""
    if backend.lazy or backend.name == "numpy":
        pytest.skip("two memories need a device")
    if backend.name == "strict":
        pytest.xfail("xarray's as_numpy cannot copy array-api-strict arrays to the host")
    left, right = _coupled()
    on_device = _on(backend, left)
    with pytest.raises(ValueError, match="different memories") as err:
        xsvd.mca(on_device, right, 3)
    moved = eval(_code(str(err.value), "left.as_numpy"), {"left": on_device})
    res = xsvd.mca(moved, right, 3, seed=0)
    np.testing.assert_allclose(
        res.singular_values, _mca_truth(left.values, right.values, 3), rtol=1e-8
    )


def _hilbert_truth(x: np.ndarray, k: int) -> np.ndarray:
    """Singular values of the analytic signal of the centered columns (periodic)."""
    signal = pytest.importorskip("scipy.signal")
    keep = ~np.isnan(x).all(axis=0)
    z = signal.hilbert(_centered(x[:, keep]), axis=0)
    return np.linalg.svd(z, compute_uv=False)[:k]


@pytest.mark.parametrize("option", ["n_power_iter", "krylov", "dtype"])
def test_hilbert_compressed_options_for_exact_advice(backend, option):
    """hilbert.py: a compressed-only option with the exact solver; dropping it or
    `method='compressed'` gives the Hilbert EOFs."""
    left, _ = _coupled()
    da = _on(backend, left)
    value = {"n_power_iter": 4, "krylov": True, "dtype": "float64"}[option]
    with pytest.raises(ValueError, match="pass `method='compressed'`"):
        xsvd.hilbert_eof(da, 3, padding="none", method="exact", **{option: value})
    want = _hilbert_truth(left.values, 3)
    res = xsvd.hilbert_eof(da, 3, padding="none", method="exact")
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-8)
    res = xsvd.hilbert_eof(da, 3, padding="none", method="compressed", seed=0, **{option: value})
    np.testing.assert_allclose(_host(backend, res.singular_values), want, rtol=1e-6)


def test_hilbert_compressed_without_k_advice_passes_k(backend):
    """hilbert.py: method='compressed' without k; `k=` runs."""
    left, _ = _coupled()
    da = _on(backend, left)
    with pytest.raises(ValueError, match="pass `k=`"):
        xsvd.hilbert_eof(da, padding="none", method="compressed")
    res = xsvd.hilbert_eof(da, k=3, padding="none", method="compressed", seed=0)
    np.testing.assert_allclose(
        _host(backend, res.singular_values), _hilbert_truth(left.values, 3), rtol=1e-6
    )


def test_hilbert_k_above_the_ocean_features_advice(backend):
    """hilbert.py: k above the features that are not all-NaN; the advised k <= them."""
    left, _ = _coupled()
    left[:, 5:] = np.nan  # land
    da = _on(backend, left)
    with pytest.raises(ValueError, match=r"pass k <= \d+") as err:
        xsvd.hilbert_eof(da, 6, padding="none", method="exact")
    k = int(re.search(r"pass k <= (\d+)", str(err.value))[1])
    res = xsvd.hilbert_eof(da, k, padding="none", method="exact")
    np.testing.assert_allclose(
        _host(backend, res.singular_values), _hilbert_truth(left.values, k), rtol=1e-8
    )


@pytest.mark.parametrize("follow", ["missing=", "interpolate_na", "fillna"])
def test_hilbert_gaps_advice_fills_them(backend, follow):
    """analytic_field.py: NaN at some samples; `missing='mean'` (each gap its feature's
    mean), `da.interpolate_na('time')`, or `da.fillna(0)` on anomalies, gives the Hilbert
    EOFs of the filled field."""
    left, _ = _coupled()
    anomalies = left - left.mean("time")
    gappy = anomalies.copy()
    gappy[5, 2] = np.nan
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.hilbert_eof(_on(backend, gappy), 3, padding="none")
    if follow == "missing=":
        option = eval("dict(" + _code(str(err.value), follow) + ")")
        filled = gappy.fillna(gappy.mean("time"))
        res = xsvd.hilbert_eof(_on(backend, gappy), 3, padding="none", method="exact", **option)
    else:
        filled = eval(_code(str(err.value), follow), {"da": gappy})
        res = xsvd.hilbert_eof(_on(backend, filled), 3, padding="none", method="exact")
    np.testing.assert_allclose(
        _host(backend, res.singular_values), _hilbert_truth(filled.values, 3), rtol=1e-8
    )


def test_extended_eof_embedding_too_long_advice_uses_fewer_lags(backend):
    """extended.py: embedding longer than the record; fewer lags give the EOFs of the
    lagged matrix."""
    left, _ = _coupled()
    da = _on(backend, left)
    with pytest.raises(ValueError, match="Use fewer lags"):
        xsvd.extended_eof(da, 3, embedding=40)
    res = xsvd.extended_eof(da, 3, embedding=4, method="exact")
    x = left.values
    lagged = np.hstack([x[j : j + 37] for j in range(4)])
    np.testing.assert_allclose(
        _host(backend, res.singular_values), _svals(_centered(lagged), 3), rtol=1e-8
    )


# --------------------------------------------------------- climate/bootstrap.py, resampling.py


def _boot_field():
    left, _ = _coupled(12)
    return left


@pytest.mark.parametrize("option", [{"dtype": "float32"}, {"krylov": False}])
def test_bootstrap_option_advice_leaves_it_out(backend, option):
    """bootstrap.py: dtype= and krylov=False are refused; left out, the data's S is right."""
    field = _boot_field()
    da = _on(backend, field)
    with pytest.raises(ValueError, match="Leave out"):
        xsvd.bootstrap(da, 3, 8, seed=0, **option)
    res = xsvd.bootstrap(da, 3, 8, seed=0)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(field.values), 3), rtol=1e-8)


def test_bootstrap_ci_advice_takes_a_fraction():
    """bootstrap.py: ci=95 is refused; the example 0.95 gives the 2.5 and 97.5 percentiles
    of the replicates' explained variance ratios."""
    field = _boot_field()
    with pytest.raises(ValueError, match="e.g. 0.95") as err:
        xsvd.bootstrap(field, 3, 20, seed=0, ci=95)
    ci = float(re.search(r"e\.g\. ([0-9.]+)", str(err.value))[1])
    res = xsvd.bootstrap(field, 3, 20, seed=0, ci=ci)
    reps = res.replicate_explained_variance_ratio.transpose("replicate", "component").values
    bounds = res.explained_variance_ratio_ci.values
    want = np.percentile(reps, [2.5, 97.5], axis=0)
    np.testing.assert_allclose(np.sort(bounds.reshape(-1)), np.sort(want.reshape(-1)), rtol=1e-10)


def test_bootstrap_unconverged_advice_leaves_out_n_power_iter():
    """bootstrap.py: n_power_iter=0 leaves the replicates unconverged (a warning); left
    out, the passes stop converged, silently, with the data's S right."""
    field = _boot_field()
    with pytest.warns(RuntimeWarning, match="Leave out n_power_iter"):
        xsvd.bootstrap(field, 3, 8, seed=0, n_power_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = xsvd.bootstrap(field, 3, 8, seed=0)
    np.testing.assert_allclose(res.S, _svals(_centered(field.values), 3), rtol=1e-8)


def test_bootstrap_replicate_patterns_advice_keeps_them():
    """bootstrap.py: replicate_V without keep_patterns; the advised keep_patterns=True
    keeps each replicate's patterns, each the SVD of its resampled rows."""
    field = _boot_field()
    res = xsvd.bootstrap(field, 3, 6, seed=0)
    with pytest.raises(AttributeError, match="keep_patterns=True"):
        _ = res.replicate_V
    kept = xsvd.bootstrap(field, 3, 6, seed=0, keep_patterns=True)
    V = kept.replicate_V.transpose("replicate", "x", "component").values
    S = kept.replicate_singular_values.transpose("replicate", "component").values
    x = field.values
    for r in range(6):  # each replicate's patterns: unit, and with its S a rank-3 truth
        np.testing.assert_allclose(V[r].T @ V[r], np.eye(3), atol=1e-8)
    counts = kept.counts.transpose("replicate", "time").values  # draws of each sample
    for r in range(6):
        rows = np.repeat(x, counts[r].astype(int), axis=0)
        np.testing.assert_allclose(S[r], _svals(_centered(rows), 3), rtol=1e-6)


def test_bootstrap_reconstruct_advice_uses_xsvd_svd():
    """base.py with bootstrap.py's reason: reconstruct() of a bootstrap is refused; the
    advised `xsvd.svd` rebuilds the rank-k field."""
    field = _boot_field()
    res = xsvd.bootstrap(field, 3, 6, seed=0)
    with pytest.raises(ValueError, match="use `xsvd.svd` to rebuild"):
        res.reconstruct()
    rebuilt = xsvd.svd(field, 3, dim="time", center=True).reconstruct()
    x = field.values
    np.testing.assert_allclose(rebuilt.values - x.mean(0), _rank(_centered(x), 3), atol=1e-10)


@pytest.mark.parametrize("follow", ["interpolate_na", "notnull", "missing"])
def test_bootstrap_gaps_advice(follow):
    """resampling.py: NaN at some samples, land NaN everywhere; `da.interpolate_na(dim)`
    gives the filled field's bootstrap, `da.where(da.notnull().all(dim))` that of the
    complete features (it advised `da.dropna(dim, how='any')`, which drops every sample
    where land is NaN: an empty field), `missing='mean'` that of the gaps at their
    feature's mean (not offered before: the bootstrap took no missing=)."""
    field = _boot_field()
    field[:, 6] = np.nan  # land
    gappy = field.copy()
    gappy[5, 2] = np.nan
    with pytest.raises(xsvd.MissingValueError) as err:
        xsvd.bootstrap(gappy, 3, 6, seed=0)
    if follow == "missing":
        option = eval("dict(" + _code(str(err.value), "missing=") + ")")
        res = xsvd.bootstrap(gappy, 3, 6, seed=0, **option)
        x = _matrix(gappy)
        x = x[:, ~np.isnan(x).all(axis=0)]
        x = np.where(np.isnan(x), np.nanmean(x, axis=0), x)
        np.testing.assert_allclose(res.S, _svals(_centered(x), 3), rtol=1e-8)
        return
    fixed = eval(_code(str(err.value), follow), {"da": gappy, "dim": "time"})
    res = xsvd.bootstrap(fixed, 3, 6, seed=0)
    x = fixed.values
    x = x[:, ~np.isnan(x).all(axis=0)]
    if follow == "notnull":
        assert x.shape[1] == gappy.shape[1] - 2  # land and the gappy feature left out
    np.testing.assert_allclose(res.S, _svals(_centered(x), 3), rtol=1e-8)


def test_bootstrap_infinite_values_advice_makes_them_nan_then_means(backend):
    """resampling.py: inf in the data; `da.where(np.isfinite(da))` then `missing='mean'`
    (it said "Replace or drop those features", naming no call)."""
    field = _boot_field()
    bad = field.copy()
    bad[3, 1] = np.inf
    bad[9, 0] = -np.inf
    with pytest.raises(xsvd.InfiniteValueError) as err:
        xsvd.bootstrap(_on(backend, bad), 3, 6, seed=0)
    message = str(err.value)
    replaced = eval(_code(message, "isfinite"), {"da": bad, "np": np})
    option = eval("dict(" + _code(message, "missing=") + ")")
    res = xsvd.bootstrap(_on(backend, replaced), 3, 6, seed=0, **option)
    x = _matrix(replaced)
    x = np.where(np.isnan(x), np.nanmean(x, axis=0), x)
    np.testing.assert_allclose(_host(backend, res.S), _svals(_centered(x), 3), rtol=1e-8)


# ------------------------------------------------------------------------- genomics/


def _genotypes(n_variants: int = 200, n_samples: int = 60):
    return xsvd.datasets.genotypes(n_variants=n_variants, n_samples=n_samples, seed=0)


def _pca_truth(gt: xr.DataArray, w: xr.DataArray, k: int):
    """Samples x variants, centered, times the weights: (mean, S, Vt) by numpy."""
    g = gt.transpose("samples", "variants").values.astype(np.float64)
    mean = g.mean(axis=0)
    _, s, vt = np.linalg.svd((g - mean) * w.values, full_matrices=False)
    return mean, s[:k], vt[:k]


def _projected(new: xr.DataArray, w: xr.DataArray, truth) -> np.ndarray:
    mean, s, vt = truth
    g = new.transpose("samples", "variants").values.astype(np.float64)
    return (g - mean) * w.values @ vt.T / s


def test_uncentered_pca_projection_advice_centers(backend):
    """projection.py: project_samples on an uncentered PCA; decomposed with the advised
    `center=True`, the new samples' scores are the centered, weighted rows times V / S."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    data = kept.copy(data=backend(kept.values.astype(np.float64)))
    new = _genotypes(n_samples=80).isel(samples=slice(60, 80))
    with pytest.raises(ValueError, match="`center=True`"):
        xsvd.project_samples(data.svd(k=3, weights=w), new, shrinkage=False)
    res = data.svd(k=3, weights=w, center=True)
    got = backend.host(xsvd.project_samples(res, new, shrinkage=False).data)
    _same_up_to_sign(got, _projected(new, w, _pca_truth(kept, w, 3)), atol=1e-8)


@pytest.mark.parametrize("case", ["sample dim", "variant dim"])
def test_projection_dims_advice(case):
    """projection.py: new data with other dim names; `dim=` names the samples, the variant
    dim renamed as advised: the scores are the truth's."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w, center=True)
    new = _genotypes(n_samples=80).isel(samples=slice(60, 80))
    truth = _projected(new, w, _pca_truth(kept, w, 3))
    if case == "sample dim":
        other = new.rename(samples="ind")
        with pytest.raises(ValueError, match="pass `dim=`"):
            xsvd.project_samples(res, other, shrinkage=False)
        got = xsvd.project_samples(res, other, dim="ind", shrinkage=False)
    else:
        other = new.rename(variants="snp")
        with pytest.raises(ValueError, match="Rename the variant dimension") as err:
            xsvd.project_samples(res, other, shrinkage=False)
        vdim = re.search(r"to '(\w+)'", str(err.value))[1]
        got = xsvd.project_samples(res, other.rename(snp=vdim), shrinkage=False)
    _same_up_to_sign(got.values, truth, atol=1e-8)


def test_missing_variants_advice_runs_the_pca_on_the_common_ones():
    """projection.py: new data lack 50 of the PCA's variants; the advised PCA on the
    common variants (`kept.sel(variants=common)`) projects them."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w, center=True)
    new = _genotypes(n_samples=80).isel(samples=slice(60, 80), variants=slice(0, 150))
    with pytest.raises(ValueError, match="not in the new data") as err:
        xsvd.project_samples(res, new, shrinkage=False)
    scope = {"np": np, "res": res, "new": new, "kept": kept}
    exec("common = " + _code(str(err.value), "intersect1d").split("=", 1)[1], scope)
    kept = eval(_code(str(err.value), "kept.sel("), scope)
    kept, w = xsvd.patterson_scaling(kept)
    res = kept.svd(k=3, weights=w, center=True)
    got = xsvd.project_samples(res, new, shrinkage=False)
    _same_up_to_sign(got.values, _projected(new, w, _pca_truth(kept, w, 3)), atol=1e-8)


def test_duplicate_variant_ids_advice_keeps_one_of_each():
    """projection.py: new data listing a variant twice; the advised
    `new.drop_duplicates('variants')` projects them (it said "drop the duplicates first",
    with no call)."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w, center=True)
    new = _genotypes(n_samples=80).isel(samples=slice(60, 80))
    twice = xr.concat([new, new.isel(variants=[7])], dim="variants")
    with pytest.raises(ValueError, match="duplicate variant id") as err:
        xsvd.project_samples(res, twice, shrinkage=False)
    once = eval(_code(str(err.value), "drop_duplicates"), {"new": twice})
    got = xsvd.project_samples(res, once, shrinkage=False)
    _same_up_to_sign(got.values, _projected(new, w, _pca_truth(kept, w, 3)), atol=1e-8)


def test_oadp_with_shrinkage_advice():
    """projection.py: shrinkage= with method='oadp'; left out, OADP runs (and its scores of
    the reference's own samples lie near theirs); method='lzw' with it is the truth."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w, center=True)
    with pytest.raises(ValueError, match="Leave shrinkage out, or use method='lzw'"):
        xsvd.project_samples(res, gt, method="oadp", shrinkage=False)
    lzw = xsvd.project_samples(res, gt, method="lzw", shrinkage=False)
    _same_up_to_sign(lzw.values, _projected(gt, w, _pca_truth(kept, w, 3)), atol=1e-8)
    oadp = xsvd.project_samples(res, gt, method="oadp")
    assert oadp.shape == lzw.shape and np.isfinite(oadp.values).all()


@pytest.mark.parametrize("writer", ["pack_genotypes", "write_plink"])
def test_genotype_writers_dim_advice(writer, tmp_path):
    """packing.py, plink.py: data with another sample dim name; the advised `dim=` packs or
    writes them, and they read back as the same genotypes."""
    gt = _genotypes().rename(samples="ind")
    call = {
        "pack_genotypes": lambda **kw: xsvd.pack_genotypes(gt, **kw),
        "write_plink": lambda **kw: xsvd.write_plink(gt, tmp_path / "toy", **kw),
    }[writer]
    with pytest.raises(ValueError, match="`dim=`"):
        call()
    out = call(dim="ind")
    back = out if writer == "pack_genotypes" else xsvd.open_plink(tmp_path / "toy")
    back = np.asarray(back.transpose("variants", ...).values, dtype=np.float64)
    np.testing.assert_array_equal(back, gt.transpose("variants", "ind").values)


def test_scores_without_ids_advice_assigns_them(tmp_path):
    """plink2.py: scores without sample ids; the advised `scores.assign_coords(...)`
    writes an .eigenvec whose rows are the ids and the scores."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    scores = kept.svd(k=3, weights=w, center=True).U
    ids = scores.samples.values
    bare = scores.drop_vars(["samples", "population"])
    with pytest.raises(ValueError, match="no sample ids") as err:
        xsvd.write_eigenvec(bare, tmp_path / "a.eigenvec")
    named = eval(_code(str(err.value), "assign_coords"), {"scores": bare, "ids": ids})
    path = xsvd.write_eigenvec(named, tmp_path / "a.eigenvec")
    rows = [line.split() for line in open(path).read().splitlines()[1:]]
    assert [r[-4] if len(r) > 4 else r[0] for r in rows] == list(ids)
    np.testing.assert_allclose(
        np.array([r[-3:] for r in rows], dtype=float), scores.values, atol=1e-5
    )


def test_uncentered_pca_loadings_advice_writes_without_them(tmp_path):
    """plink2.py: variant weights of an uncentered PCA are refused; `loadings=None` writes
    the .eigenvec and .eigenval (PLINK 2's eigenvalues: S**2 / the number of variants)."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w)
    with pytest.raises(ValueError, match="`loadings=None`"):
        xsvd.write_plink_pca(res, tmp_path / "pca")
    paths = xsvd.write_plink_pca(res, tmp_path / "pca", loadings=None)
    assert sorted(p.suffix for p in paths) == [".eigenval", ".eigenvec"]
    g = kept.transpose("samples", "variants").values.astype(np.float64) * w.values
    values = np.loadtxt(next(p for p in paths if p.suffix == ".eigenval"))
    s = _svals(g, 3)
    np.testing.assert_allclose(values * g.shape[1], s**2, rtol=1e-5)


def test_tracy_widom_count_as_text_advice():
    """twstats.py: n_variants='200' is refused; the advised int(text) gives the test with
    200 markers."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd.exact(weights=w, center=True)
    text = "200"
    with pytest.raises(ValueError, match="int\\(text\\)") as err:
        xsvd.tracy_widom(res, n_variants=text)
    option = eval("dict(" + _code(str(err.value), "int(text)") + ")", {"text": text})
    got = xsvd.tracy_widom(res, **option)
    xr.testing.assert_allclose(got, xsvd.tracy_widom(res, n_variants=200))


def test_tracy_widom_of_k_components_advice_tests_every_eigenvalue():
    """twstats.py: a result of 3 of 59 eigenvalues; the advised
    `xsvd.tracy_widom(xsvd.genomics.relationship_eigenvalues(kept, w, ...))` equals the
    test of the exact SVD's every eigenvalue."""
    gt = _genotypes()
    kept, w = xsvd.patterson_scaling(gt)
    with pytest.raises(ValueError, match="needs them all") as err:
        xsvd.tracy_widom(kept.svd(k=3, weights=w, center=True))
    got = eval(
        _code(str(err.value), "relationship_eigenvalues"), {"xsvd": xsvd, "kept": kept, "w": w}
    )
    want = xsvd.tracy_widom(kept.svd.exact(weights=w, center=True))
    for name in want.data_vars:
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-6, atol=1e-10)


def _with_missing_calls():
    gt = _genotypes().astype(np.float64)
    gt[3, 5] = np.nan
    gt[7, 11] = np.nan
    return gt


def test_afreq_without_observation_counts_advice_passes_the_genotypes(tmp_path):
    """plink2.py: a missing='mean' PCA written without genotypes warns (OBS_CT unknown);
    the advised `write_plink_pca(res, prefix, genotypes=kept)` writes each variant's OBS_CT,
    twice its called genotypes."""
    kept, w = xsvd.patterson_scaling(_with_missing_calls())
    res = kept.svd(k=3, weights=w, center=True, missing="mean")
    with pytest.warns(UserWarning, match="genotypes=kept") as record:
        xsvd.write_plink_pca(res, tmp_path / "a")
    code = _code(str(record[0].message), "write_plink_pca")
    paths = eval(
        code,
        {
            "write_plink_pca": xsvd.write_plink_pca,
            "res": res,
            "prefix": tmp_path / "b",
            "kept": kept,
        },
    )
    afreq = next(p for p in paths if p.suffix == ".afreq").read_text().splitlines()
    header = afreq[0].split()
    counts = np.array([int(line.split()[header.index("OBS_CT")]) for line in afreq[1:]])
    np.testing.assert_array_equal(counts, 2 * kept.notnull().sum("samples").values)


def test_eigenvec_allele_of_other_genotypes_advice_passes_the_pca_ones(tmp_path):
    """plink2.py: genotypes lacking some of the PCA's variants are refused; the genotypes
    the PCA was made from write the files."""
    kept, w = xsvd.patterson_scaling(_with_missing_calls())
    res = kept.svd(k=3, weights=w, center=True, missing="mean")
    with pytest.raises(ValueError, match="pass the genotypes the PCA was made from"):
        xsvd.write_plink_pca(res, tmp_path / "a", genotypes=kept.isel(variants=slice(0, 100)))
    paths = xsvd.write_plink_pca(res, tmp_path / "a", genotypes=kept)
    assert any(p.suffix == ".afreq" for p in paths)


def test_dosage_of_another_variable_name_advice_passes_genotype():
    """vcf.py: calls under another name; `genotype=` gives the summed allele calls."""
    rng = np.random.default_rng(13)
    calls = rng.integers(0, 2, size=(6, 4, 2)).astype("int8")
    ds = xr.Dataset({"gt": (("variants", "samples", "ploidy"), calls)})
    with pytest.raises(KeyError, match="`genotype=`"):
        xsvd.dosage(ds)
    np.testing.assert_array_equal(xsvd.dosage(ds, genotype="gt").values, calls.sum(axis=-1))


def test_other_alleles_advice_drops_them_from_both():
    """projection.py: variants whose alleles differ in the new data; dropped from both (the
    PCA run again without them), the scores are the truth's."""
    gt = _genotypes().assign_coords(
        allele_1=("variants", np.array(["A"] * 200)), allele_2=("variants", np.array(["G"] * 200))
    )
    new = gt.isel(samples=slice(0, 10)).copy()
    a1 = new.allele_1.values.copy()
    a1[[4, 9]] = "T"
    new = new.assign_coords(allele_1=("variants", a1))
    kept, w = xsvd.patterson_scaling(gt)
    res = kept.svd(k=3, weights=w, center=True)
    with pytest.raises(ValueError, match="Drop them from both") as err:
        xsvd.project_samples(res, new, shrinkage=False)
    assert "2 variant(s)" in str(err.value)
    same = new.allele_1.values == gt.allele_1.values
    kept, w = xsvd.patterson_scaling(gt.isel(variants=same))
    res = kept.svd(k=3, weights=w, center=True)
    got = xsvd.project_samples(res, new.isel(variants=same), shrinkage=False)
    truth = _projected(new.isel(variants=same), w, _pca_truth(kept, w, 3))
    _same_up_to_sign(got.values, truth, atol=1e-8)


# ---------------------------------------------------------------------------- cli.py


def _cli_store(tmp_path, field: xr.DataArray):
    pytest.importorskip("zarr", reason='xsvd run needs zarr: pip install "xsvd[io]"')
    path = tmp_path / "in.zarr"
    field.to_dataset(name="sst").to_zarr(path)
    return path


def _flags(message: str) -> list[str]:
    """The flags (and their values) that ``message`` advises, e.g. ``--dim time``."""
    found = re.findall(r"(--[\w-]+(?: [\w.]+)?)", message)
    return [part.rstrip(".") for f in found for part in f.split()]


@pytest.mark.parametrize(
    ("argv", "advised"),
    [
        (["--k", "3", "--center"], "--dim"),  # no --dim: "e.g. --dim time"
        (["--dim", "time", "--center", "--method", "compressed"], "--k"),
        (["--dim", "time", "--k", "3", "--center"], "--missing"),  # NaN: "--missing mean"
    ],
    ids=["dim", "k", "missing"],
)
def test_cli_advice_in_flags(tmp_path, capsys, argv, advised):
    """cli.py: `xsvd run` refuses with advice in flags; the advised flag added, the written
    result's S is the truth's."""
    from xsvd.cli import main

    field = _field()
    if advised == "--missing":
        field = _with_gaps(field)
    store = _cli_store(tmp_path, field)
    out = tmp_path / "out.zarr"
    assert main(["run", str(store), *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    flags = _flags(err[err.rindex(advised) :])[:2]
    if advised == "--k":
        flags = ["--k", "3"]  # "needs --k, the number of components": the count is ours
    assert flags[0] == advised
    seed = ["--seed", "0"] if "compressed" in argv else []  # a fixed start block
    assert main(["run", str(store), *argv, *flags, *seed, "--out", str(out)]) == 0
    res = xsvd.open_result(out)
    x = _mean_filled(field) if advised == "--missing" else _matrix(field)
    np.testing.assert_allclose(res.S[:3], _svals(_centered(x), 3), rtol=1e-6)


def test_cli_existing_output_advice_overwrites(tmp_path, capsys):
    """cli.py: --out exists; the advised --overwrite replaces it with the new result."""
    from xsvd.cli import main

    field = _field()
    store = _cli_store(tmp_path, field)
    out = tmp_path / "out.zarr"
    argv = ["run", str(store), "--dim", "time", "--k", "2", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    argv[argv.index("2")] = "3"  # another k, and center
    assert main([*argv, "--center"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*argv, "--center", "--overwrite"]) == 0
    res = xsvd.open_result(out)
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(field)), 3), rtol=1e-6)


# ------------------------------------------------------------------ io/, plot/, datasets/


def test_existing_store_advice_overwrites_with_mode_w(tmp_path):
    """io/store.py: saving over a result store is refused; the advised mode='w' replaces it,
    and the store reopens as the new result."""
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    field = _field()
    path = tmp_path / "r.zarr"
    field.svd(k=2, dim="time", center=True).to_zarr(path)
    res = field.svd(k=3, dim="time", center=True)
    with pytest.raises(FileExistsError, match="pass mode='w'"):
        res.to_zarr(path)
    res.to_zarr(path, mode="w")
    np.testing.assert_allclose(
        xsvd.open_result(path).S, _svals(_centered(_matrix(field)), 3), rtol=1e-10
    )


def test_store_of_several_variables_advice_chooses_one(tmp_path):
    """io/zarr.py: a store of two variables; the advised `variable=` opens the one named."""
    pytest.importorskip("zarr", reason='needs zarr: pip install "xsvd[io]"')
    sst, slp = _pair()
    xr.Dataset({"sst": sst, "slp": slp}).to_zarr(tmp_path / "two.zarr")
    with pytest.raises(ValueError, match="`variable=`"):
        xsvd.open_zarr(tmp_path / "two.zarr")
    da = xsvd.open_zarr(tmp_path / "two.zarr", variable="slp")
    res = da.svd(k=3, dim="time", center=True)
    np.testing.assert_allclose(res.S, _svals(_centered(slp.values), 3), rtol=1e-8)


def _pyplot():
    matplotlib = pytest.importorskip("matplotlib", reason='needs matplotlib: "xsvd[plot]"')
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _standardized_pcs(x: np.ndarray, k: int) -> np.ndarray:
    u = np.linalg.svd(_centered(x), full_matrices=False)[0][:, :k]
    return u / u.std(axis=0, ddof=1)  # unit variance, as eofs' pcs(pcscaling=1)


def test_timeseries_on_one_axes_advice_overlays():
    """plot/lines.py: ax= with three components; the advised overlay=True draws the three
    standardized PCs on it."""
    plt = _pyplot()
    field = _field()
    res = field.svd(k=3, dim="time", center=True)
    fig, ax = plt.subplots()
    try:
        with pytest.raises(ValueError, match="pass overlay=True"):
            res.plot.timeseries(ax=ax)
        res.plot.timeseries(ax=ax, overlay=True)
        lines = np.array([line.get_ydata() for line in ax.get_lines()[:3]]).T
    finally:
        plt.close(fig)
    _same_up_to_sign(lines, _standardized_pcs(_matrix(field), 3), atol=1e-8)


def test_timeseries_of_two_sample_dims_advice_stacks_them():
    """plot/common.py: U over (run, time); the advised stack, with dim='sample', plots each
    PC along the stacked samples."""
    plt = _pyplot()
    field = _field()
    other = field.copy(data=0.5 * field.values[::-1] + 1.0)
    two = xr.concat([field, other], dim="run").transpose("run", ...)
    res = two.svd(k=3, dim=("run", "time"), center=True)
    with pytest.raises(ValueError, match="Stack them before decomposing") as err:
        res.plot.timeseries()
    code = re.search(r"e\.g\. (da\.stack\(.*?\)\)) with dim='(\w+)'", str(err.value))
    stacked = eval(code[1], {"da": two})
    fig = stacked.svd(k=3, dim=code[2], center=True).plot.timeseries(overlay=True)
    try:
        ax = fig if hasattr(fig, "get_lines") else fig.axes[0]
        lines = np.array([line.get_ydata() for line in ax.get_lines()[:3]]).T
    finally:
        plt.close("all")
    x = two.values.reshape(-1, 20)
    _same_up_to_sign(lines, _standardized_pcs(x, 3), atol=1e-8)


def test_dataset_chunks_of_an_unknown_dim_advice_uses_its_dims():
    """datasets/checks.py: chunks naming a dim the field lacks; its own dims chunk it (the
    same values, lazily)."""
    pytest.importorskip("dask")
    with pytest.raises(ValueError, match="use only") as err:
        xsvd.datasets.climate_field(n_time=40, n_lat=6, n_lon=8, chunks={"tim": 10})
    dims = eval(re.search(r"use only (\[.*\])", str(err.value))[1])
    lazy = xsvd.datasets.climate_field(n_time=40, n_lat=6, n_lon=8, chunks={dims[0]: 10})
    assert lazy.chunks is not None
    xr.testing.assert_identical(
        lazy.compute(), xsvd.datasets.climate_field(n_time=40, n_lat=6, n_lon=8)
    )


# ----------------------------------------------------- the rest of my files' advice


def test_new_data_lacking_a_variable_advice_gives_every_one():
    """multivariate.py: project() of new data without slp; with every decomposed variable
    the scores are the joint truth's (here the decomposed rows: U)."""
    sst, slp = _pair()
    res = xr.Dataset({"sst": sst, "slp": slp}).svd(k=3, dim="time", center=True)
    with pytest.raises(ValueError, match=r"needs every decomposed variable \['sst', 'slp'\]"):
        res.project({"sst": sst})
    np.testing.assert_allclose(res.project({"sst": sst, "slp": slp}), res.U, atol=1e-10)


def test_units_pint_cannot_convert_advice_converts_by_hand():
    """units.py: new data in a unit pint does not know; converted to the decomposed data's
    unit and its `units` attribute set, as advised, they project as the data do."""
    _pint()
    field = _field().assign_attrs(units="K")
    res = field.svd(k=3, dim="time", center=True)
    new = (field * 1000.0).assign_attrs(units="millikelvinz")
    with pytest.raises(ValueError, match="Convert the new data to 'K'") as err:
        res.project(new)
    unit = re.search(r"set their `units` attribute to '(\w+)'", str(err.value))[1]
    converted = (new / 1000.0).assign_attrs(units=unit)
    np.testing.assert_allclose(res.project(converted), res.U, atol=1e-10)


@pytest.mark.parametrize("given", [{"sub_blok_elements": 10}, {"sub_block_elements": 0}])
def test_set_options_advice_names_the_options_and_bounds(given):
    """config.py: an unknown option or one below its least value; a listed option at its
    least value works (the SVD unchanged)."""
    with pytest.raises(ValueError, match="sub_block_elements") as err:
        xsvd.set_options(**given)
    least = re.search(r"must be an integer >= (\d+)", str(err.value))
    name, value = "sub_block_elements", int(least[1]) if least else 64
    field = _field()
    with xsvd.set_options(**{name: value}):
        res = field.svd(k=3, dim="time", center=True, method="compressed", seed=0)
    np.testing.assert_allclose(res.S, _svals(_centered(_matrix(field)), 3), rtol=1e-6)


# ------------------------------------------- labeled/preprocess.py: center= given values


def test_center_as_a_plain_array_advice_wraps_it(backend):
    """preprocess.py: center= as a NumPy array is refused; wrapped as advised
    (`xr.DataArray(values, dims=..., coords=...)`), those values are subtracted."""
    field = _field()
    values = np.linspace(9.0, 11.0, 20).reshape(4, 5)
    da = _on(backend, field)
    with pytest.raises(TypeError, match="Wrap them") as err:
        da.svd(k=3, dim="time", center=values)
    code = _code(str(err.value), "xr.DataArray").replace("coords=...", "coords=coords")
    coords = {"lat": field.lat, "lon": field.lon}  # the "..." of the advice: the data's
    center = eval(code, {"xr": xr, "values": values, "coords": coords})
    res = da.svd(k=3, dim="time", center=center)
    want = _svals(_matrix(field) - values.reshape(-1), 3)
    np.testing.assert_allclose(_host(backend, res.S), want, rtol=1e-8)


def test_center_with_nan_advice_fills_them(backend):
    """preprocess.py: center= NaN at a feature; the advised `center.fillna(0)` leaves that
    feature as it is and subtracts the others' values."""
    field = _field()
    values = np.linspace(9.0, 11.0, 20).reshape(4, 5)
    values[1, 2] = np.nan
    center = xr.DataArray(values, dims=("lat", "lon"), coords={"lat": field.lat, "lon": field.lon})
    da = _on(backend, field)
    with pytest.raises(ValueError, match="NaN or infinite") as err:
        da.svd(k=3, dim="time", center=center)
    filled = eval(_code(str(err.value), "fillna"), {"center": center})
    res = da.svd(k=3, dim="time", center=filled)
    want = _svals(_matrix(field) - np.nan_to_num(values).reshape(-1), 3)
    np.testing.assert_allclose(_host(backend, res.S), want, rtol=1e-8)


def test_tol_not_reached_warning_advice_passes_a_larger_max_passes():
    """solver.py: tol not reached in max_passes=2 (a warning); a larger max_passes reaches
    it, silently, with the singular values right to tol."""
    s = np.r_[10.0, 9.9, 9.8, 9.7, 9.6, np.geomspace(9.5, 0.1, 25)]
    x = matrix_with_spectrum(s, 200, 120, seed=14)
    da = xr.DataArray(x, dims=("time", "cell"))
    opts = dict(k=3, dim="time", method="compressed", seed=0, tol=1e-8)
    with pytest.warns(RuntimeWarning, match="Pass a larger max_passes"):
        da.svd(max_passes=2, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = da.svd(max_passes=60, **opts)
    np.testing.assert_allclose(res.S, s[:3], rtol=1e-7)


def test_cli_coslat_without_a_latitude_advice_gives_a_weights_variable(tmp_path, capsys):
    """cli.py: --weights coslat with no latitude; the advised --weights VAR (a variable of
    the store) weights the features by it."""
    from xsvd.cli import main

    field = _field().rename(lat="y")
    store = _cli_store(tmp_path, field)
    w = xr.DataArray(np.linspace(0.5, 1.0, 4), dims="y", coords={"y": field.y})
    w.to_dataset(name="w").to_zarr(store, mode="a")
    out = tmp_path / "out.zarr"
    argv = ["run", str(store), "--var", "sst", "--dim", "time", "--k", "3", "--center"]
    assert main([*argv, "--weights", "coslat", "--out", str(out)]) == 2
    assert "give --weights VAR" in capsys.readouterr().err
    assert main([*argv, "--weights", "w", "--out", str(out)]) == 0
    x = _centered(_matrix(field)) * np.repeat(w.values, 5)
    np.testing.assert_allclose(xsvd.open_result(out).S, _svals(x, 3), rtol=1e-6)


_ANALYSES = {
    "mca": lambda da, **kw: xsvd.mca(da, da.rename(lat="y", lon="x"), 2, seed=0, **kw),
    "extended_eof": lambda da, **kw: xsvd.extended_eof(da, 2, embedding=2, seed=0, **kw),
    "hilbert_eof": lambda da, **kw: xsvd.hilbert_eof(da, 2, padding="none", **kw),
    "bootstrap": lambda da, **kw: xsvd.bootstrap(da, 2, 4, dim="time", seed=0, **kw),
}


@pytest.mark.parametrize("analysis", sorted(_ANALYSES))
def test_center_values_to_an_analysis_advice_subtracts_them_first(analysis):
    """options.py check_flag: the analyses take center=True or False only; values (here the
    means) are refused ("truth value is ambiguous" before), and the advised `da - values`
    with center=False gives what center=True gives."""
    run, field = _ANALYSES[analysis], _field()
    values = field.mean("time")
    with pytest.raises(TypeError, match="center must be True or False here") as err:
        run(field, center=values)
    code = _code(str(err.value), "da - values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = run(eval(code, {"da": field, "values": values}), center=False)
    if analysis == "extended_eof":  # center=True centers each lagged copy on its window
        x = _matrix(field - values)
        lagged = np.hstack([x[:-1], x[1:]])  # embedding 2, tau 1
        want = _svals(lagged[:, ~np.isnan(lagged).any(axis=0)], 2)
    else:
        want = run(field, center=True).S.values
    np.testing.assert_allclose(got.S.values, want, rtol=1e-8)
