"""``LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search, as
``torch.optim.LBFGS`` (the same algorithm, step for step, so that trajectories agree).

The parameters are seen as one flat vector. The two-loop recursion, the line search and the
curvature history are bookkeeping on a few vectors of the parameters' dtype, done on the
host with numpy (they are dot products and axpys, dominated by the closure's cost); the
parameters are written back with ``copy_``. The state keeps PyTorch's keys (``d``, ``t``,
``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``,
``func_evals``, ``n_iter``) on the first parameter.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from ..device import host, move
from ..tensor import Tensor
from .optimizer import Optimizer, check_nonnegative

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
    ``bounds`` (the interval of x1 and x2 by default); its midpoint when there is none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _zoom_step(bracket, insuf_progress, t):
    """Keep the zoom's trial step ``t`` away from the bracket's ends (PyTorch's safeguard):
    returns the step and the new "insufficient progress" flag."""
    eps = 0.1 * (max(bracket) - min(bracket))
    if min(max(bracket) - t, t - min(bracket)) >= eps:
        return t, False
    if insuf_progress or t >= max(bracket) or t <= min(bracket):
        if abs(t - max(bracket)) < abs(t - min(bracket)):
            return max(bracket) - eps, False
        return min(bracket) + eps, False
    return t, True


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A line search along ``d`` from step ``t`` that ends at a step meeting the strong Wolfe
    conditions (or the closest bracket end): returns (loss, flat gradient, step, evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd = None
    while ls_iter < max_ls:     # bracketing phase
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:     # zoom phase
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        t, insuf_progress = _zoom_step(bracket, insuf_progress, t)
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    t = bracket[low_pos]
    return bracket_f[low_pos], bracket_g[low_pos], t, ls_func_evals


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
    """The L-BFGS direction ``-H g`` by the two-loop recursion over the history."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q = q + old_dirs[i] * -al[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r = r + old_stps[i] * (al[i] - be_i)
    return r


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None)``.

    ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` closure evaluations,
    ``max_iter * 5 // 4`` by default); ``line_search_fn`` is None (fixed steps of ``lr``)
    or "strong_wolfe". One parameter group only, as PyTorch's.
    """
    _flat_state = True      # d, prev_flat_grad...: one vector over all the parameters

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_nonnegative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # --------------------------------------------------------------- the flat vector

    def _gather_flat_grad(self):
        """The gradients of all parameters as one host vector (zeros where None)."""
        views = [np.zeros(p.numel(), p.dtype) if p.grad is None
                 else np.asarray(host(p.grad._data)).reshape(-1) for p in self._params]
        return np.concatenate(views)

    def _clone_param(self):
        return [np.array(host(p._data)) for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p.copy_(Tensor(move(np.ascontiguousarray(data, p.dtype), p.device)))

    def _add_grad(self, step_size, update):
        """Every parameter plus ``step_size`` times its slice of ``update``."""
        offset, step = 0, np.asarray(step_size).astype(update.dtype)
        values = []
        for p in self._params:
            n = p.numel()
            current = np.asarray(host(p._data))
            values.append(current + step * update[offset:offset + n].reshape(p.shape))
            offset += n
        self._set_param(values)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # --------------------------------------------------------------- step

    def step(self, closure):
        """Run the iterations of one optimization step; ``closure`` re-evaluates the model
        (it is called with grad enabled) and returns the loss. Returns the first loss."""
        group = self.param_groups[0]
        lr = float(group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        def evaluate():
            with autograd.enable_grad():
                return closure()

        with autograd.no_grad():
            state = self.state[self._params[0]]
            state.setdefault("func_evals", 0)
            state.setdefault("n_iter", 0)
            orig_loss = evaluate()
            loss = float(orig_loss)
            current_evals = 1
            state["func_evals"] += 1
            flat_grad = self._gather_flat_grad()
            if np.abs(flat_grad).max() <= tolerance_grad:
                return orig_loss
            memory = self._load_memory(state)
            d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss = memory
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d = -flat_grad
                    old_dirs, old_stps, ro, H_diag = [], [], [], 1
                else:
                    y = flat_grad - prev_flat_grad
                    s = d * t
                    ys = y.dot(s)
                    if ys > 1e-10:
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        H_diag = ys / y.dot(y)
                    al = state.setdefault("al", [None] * history_size)
                    d = _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al)
                prev_flat_grad = flat_grad.copy()
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
                else:
                    t = lr
                gtd = flat_grad.dot(d)
                if gtd > -tolerance_change:
                    break
                ls_func_evals = 0
                if line_search_fn is not None:
                    if line_search_fn != "strong_wolfe":
                        raise RuntimeError("only 'strong_wolfe' is supported")
                    x_init = self._clone_param()

                    def obj_func(x, step, direction):
                        return self._directional_evaluate(evaluate, x, step, direction)

                    loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                        obj_func, x_init, t, d, loss, flat_grad, gtd,
                        max_ls=max_eval - current_evals)
                    self._add_grad(t, d)
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                else:
                    self._add_grad(t, d)
                    opt_cond = False
                    if n_iter != max_iter:
                        loss = float(evaluate())
                        flat_grad = self._gather_flat_grad()
                        opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                        ls_func_evals = 1
                current_evals += ls_func_evals
                state["func_evals"] += ls_func_evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if np.abs(d * t).max() <= tolerance_change:
                    break
                if abs(loss - prev_loss) < tolerance_change:
                    break
            self._store_memory(state, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad,
                               prev_loss)
        return orig_loss

    # --------------------------------------------------------------- state

    @staticmethod
    def _load_memory(state):
        """The history of the previous steps, as host arrays (None before the first)."""
        def array(v):
            return None if v is None else np.array(host(v._data)) if isinstance(v, Tensor) \
                else v
        return (array(state.get("d")), state.get("t"),
                [array(v) for v in state.get("old_dirs") or []],
                [array(v) for v in state.get("old_stps") or []],
                list(state.get("ro") or []), state.get("H_diag"),
                array(state.get("prev_flat_grad")), state.get("prev_loss"))

    def _store_memory(self, state, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad,
                      prev_loss):
        """Keep the history in ``state`` under PyTorch's keys (vectors as tensors)."""
        state.update(d=Tensor(d), t=t, old_dirs=[Tensor(v) for v in old_dirs],
                     old_stps=[Tensor(v) for v in old_stps], ro=ro, H_diag=H_diag,
                     prev_flat_grad=Tensor(prev_flat_grad), prev_loss=prev_loss)
