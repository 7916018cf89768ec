"""The labeled layer: DataArrays in, labeled results out.

:mod:`.api` builds the options once and runs the pipeline (validate, stack,
units off, solve, label); :mod:`.layout` stacks N-D data to the (samples x
features) matrix and labels results back; :mod:`.dims` picks the default sample
dimension; :mod:`.preprocess` aligns weights, standardizes and moves data to a
device; :mod:`.units` takes pint units off and puts them back;
:mod:`.result` is :class:`SVDResult`, the public interface the field modules use.
"""
