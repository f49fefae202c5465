"""Autotuning of schedule templates, in the spirit of AutoTVM.

The flow::

    from nn import tune

    @tune.template("my_gemm", reference=lambda a, b, *args: a @ b)
    def my_gemm(cfg, M, N, K):
        ...                                          # te.compute the algorithm
        cfg.define_split("tile_y", y, num_outputs=2) # knobs: splits, reorders, plain choices
        cfg.define_knob("unroll", [0, 1])
        yo, yi = cfg["tile_y"].apply(s, C, y)        # read the chosen values
        return s, [A, B, C]

    task = tune.Task("my_gemm", (512, 512, 512), target="llvm")
    tuner = tune.GATuner(task)                       # or RandomTuner, GridSearchTuner
    tuner.tune(n_trial=64, measure_option=tune.MeasureOption(timeout=10),
               callbacks=[tune.progress_bar(), tune.log_to_file("gemm.jsonl")])

    with tune.apply_history_best("gemm.jsonl"):
        s, args = my_gemm(512, 512, 512)            # the fastest recorded config
    f = tune.build_best("my_gemm", 512, 512, 512, log="gemm.jsonl")   # the same, built

Each candidate is built, checked against the template's numpy reference and timed in a worker
process with a timeout, so a crash or a hang costs one trial. ``MeasureOption(executor=...,
n_parallel=8)`` fans candidates out over any ``concurrent.futures.Executor`` (a Dask or Ray
one, say); by default they run one at a time on this machine. ``nn.tune.templates`` provides
``gemm`` and ``conv2d_nchw``; ``tutorials/08_tuning.ipynb`` walks through the whole flow.
"""
from .space import ConfigSpace, ConfigEntity, SplitEntity, ReorderEntity, ChoiceEntity, Knob
from .template import template, get_template, Template, Task
from .measure import (MeasureOption, MeasureInput, MeasureResult, measure_batch,
                      run_candidate, shutdown_workers)
from .tuner import Tuner, RandomTuner, GridSearchTuner
from .ga import GATuner
from .record import TuningRecord, apply_history_best, build_best, load_records, encode, decode
from .callback import progress_bar, log_to_file
from . import templates
