"""Where stages are computed: groups of stages placed together (``s.create_group``), and the
attachments lowering checks and legalizes before bound inference (TVM's
LegalizeInvalidAttach: an attachment follows its axis into the splits and fuses made after
``compute_at``)."""
from __future__ import annotations

from te.scan import ScanOp
from te.tensor import ComputeOp, IterVar, Tensor

from .stage import Fuse, ScheduleError, Split, Stage


class Group:
    """Stages placed together (``s.create_group``): ``g.compute_at(s[C], axis)`` computes
    every member that is left at the root inside ``axis`` of ``C``."""

    def __init__(self, schedule, members):
        self.schedule, self.members = schedule, members
        self.group = None
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def compute_at(self, parent, ivar):
        if isinstance(parent, Tensor):
            parent = self.schedule[parent]
        if not isinstance(parent, Stage) or not isinstance(ivar, IterVar) or \
                ivar not in parent.all_iter_vars:
            raise ScheduleError("compute_at of a group: give a stage and one of its axes, "
                                "e.g. g.compute_at(s[C], C.op.axis[0])")
        if parent in self.members:
            raise ScheduleError(f"compute_at of a group: stage {parent.name} is a member of the "
                                "group; attach the group to a stage outside it")
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, ivar

    def compute_root(self):
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def __repr__(self):
        return f"group({', '.join(m.name for m in self.members)})"


def place_groups(sch):
    """Members of a group attached with ``compute_at`` that are at the root of their group
    are computed where the (innermost attached) group is."""
    for stage in sch.stages:
        g = stage.group
        if stage.attach_type != "root" or g is None:
            continue
        while g is not None and g.attach_type != "scope":
            g = g.group
        if g is not None:
            stage.attach_type, stage.attach_stage, stage.attach_ivar = \
                "scope", g.attach_stage, g.attach_ivar


def legalize_attach(sch):
    """TVM's LegalizeInvalidAttach: a stage attached to an axis that was split afterwards
    follows it to the inner piece, one attached to the inner axis of a later fuse follows it
    to the fused axis (repeatedly, through later splits and fuses). An attachment to the
    outer axis of a fuse stays invalid (TVM refuses it too; lowering names the leaves)."""
    for stage in sch.stages:
        if stage.attach_type != "scope" or stage.attach_stage is None:
            continue
        parent, iv = stage.attach_stage, stage.attach_ivar
        if iv in parent.leaf_iter_vars:
            continue
        changed = True
        while changed:
            changed = False
            for rel in parent.relations:
                if isinstance(rel, Split) and rel.parent is iv:
                    iv, changed = rel.inner, True
                elif isinstance(rel, Fuse) and rel.inner is iv:
                    iv, changed = rel.fused, True
        if iv in parent.leaf_iter_vars:
            stage.attach_ivar = iv


def check_attach(sch):
    """Attachments that no loop nest can hold, refused at lowering (as TVM): a stage
    attached to itself, to a stage that does not read it, or stages attached inside each
    other."""
    for stage in sch.stages:
        if stage.attach_type != "scope" or stage.scan_role is not None:
            continue
        parent = stage.attach_stage
        if parent is stage:
            raise ScheduleError(f"compute_at on stage {stage.name}: cannot attach a stage to "
                                "itself; attach it to a stage that reads it")
        seen, cur = [stage], parent
        while cur is not None and cur.attach_type == "scope" and cur.scan_role is None:
            if cur in seen:
                names = " -> ".join(x.name for x in seen + [cur])
                raise ScheduleError(f"compute_at: stages are attached inside each other "
                                    f"({names}); a stage can only be computed inside a "
                                    "stage that reads it")
            seen.append(cur)
            cur = cur.attach_stage
        if isinstance(parent.op, (ComputeOp, ScanOp)) and not parent.op.reads(stage.op):
            raise ScheduleError(f"compute_at on stage {stage.name}: stage {parent.name} does "
                                f"not consume {stage.name}; attach a stage to a consumer of "
                                "it")
