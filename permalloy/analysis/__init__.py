"""
Analyses of loop and buffer IR that several passes and targets share.

- `affine`: affine forms of index expressions (`split_affine`, `unit_stride`,
  `gathered`);
- `collapse`: merging the loop dimensions every access walks as one;
- `rows`: which loop ops read each other only at their own row, and the row
  groups of a kernel;
- `kernel`: the facts about one kernel for the layouts of a launch
  (`analyze_kernel`, `stage_space`, `reduction_direction`) and
  `UnsupportedKernelError`, which every kernel target raises.
"""

from permalloy.analysis.kernel import UnsupportedKernelError

__all__ = ["UnsupportedKernelError"]
