"""NVIDIA GPU backend (loop IR -> numba.cuda kernels). Not implemented yet: see issue 3."""


def build(sch, args, target, name="default_function"):
    raise NotImplementedError("target='cuda' is not implemented yet (tensorweave issue 3); "
                              "build for target='llvm'")
