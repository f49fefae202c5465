"""Misuse of nn.optim and nn.optim.lr_scheduler: one test per mistake, each error naming the
argument and value (PyTorch's messages)."""
import re

import pytest

import nn
from nn import optim
from nn.optim import lr_scheduler
from nn.optim.optimizer import Optimizer, required


def _param():
    return nn.zeros(3, requires_grad=True)


# ----------------------------------------------------------------------------- hyper-parameters

@pytest.mark.parametrize("make,message", [
    (lambda p: optim.SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.SGD(p, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, weight_decay=-1e-4), "Invalid weight_decay value: -0.0001"),
    (lambda p: optim.Adam(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: optim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.AdamW(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.Adagrad(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: optim.RMSprop(p, alpha=-0.9), "Invalid alpha value: -0.9"),
    (lambda p: optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_invalid_hyper_parameter_names_it(make, message):
    with pytest.raises(ValueError, match=message):
        make([_param()])


def test_nesterov_without_momentum():
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD([_param()], lr=0.1, nesterov=True)


def test_nesterov_with_dampening():
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD([_param()], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)


def test_differentiable_steps_are_refused():
    with pytest.raises(RuntimeError, match=re.escape(
            "differentiable=True is not supported: nn's optimizer steps run as fused kernels "
            "outside the autograd graph")):
        optim.Adam([_param()], differentiable=True)


# ----------------------------------------------------------------------------- parameters

def test_empty_parameter_list():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)


def test_a_tensor_instead_of_an_iterable():
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got nn.Tensor"):
        optim.SGD(_param(), lr=0.1)


def test_a_set_of_parameters():
    with pytest.raises(TypeError, match="ordering of tensors in sets will change between runs. "
                                        "Please use a list instead"):
        optim.SGD([{"params": {_param()}}], lr=0.1)


def test_a_parameter_that_is_not_a_tensor():
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is list"):
        optim.SGD([[1.0, 2.0]], lr=0.1)


def test_a_non_leaf_parameter():
    x = _param()
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x * 2], lr=0.1)


def test_a_parameter_in_two_groups():
    x = _param()
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        optim.SGD([{"params": [x]}, {"params": [x], "lr": 0.5}], lr=0.1)


def test_a_param_group_that_is_not_a_dict():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([_param()])


def test_mixing_named_and_unnamed_parameters():
    with pytest.raises(ValueError, match="all optimizer params should be with/without names"):
        optim.SGD([("w", _param()), _param()], lr=0.1)


def test_a_required_hyper_parameter_missing_from_a_group():
    class Plain(Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": required})
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required "
                                         "optimization parameter lr"):
        Plain([_param()])


def test_an_optimizer_without_an_update():
    class Plain(Optimizer):
        pass
    p = _param()
    p.grad = nn.ones(3)
    with pytest.raises(NotImplementedError, match="Plain must define _update"):
        Plain([p], {}).step()


# ----------------------------------------------------------------------------- state dicts

def test_load_state_dict_with_another_number_of_groups():
    saved = optim.SGD([_param()], lr=0.1).state_dict()
    opt = optim.SGD([{"params": [_param()]}, {"params": [_param()]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                                         "parameter groups"):
        opt.load_state_dict(saved)


def test_load_state_dict_with_another_group_size():
    saved = optim.SGD([_param()], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group"):
        optim.SGD([_param(), _param()], lr=0.1).load_state_dict(saved)


def test_load_state_dict_with_state_of_another_shape():
    p = _param()
    saved = {"state": {0: {"step": nn.tensor(1.0), "exp_avg": nn.zeros(4, 5),
                           "exp_avg_sq": nn.zeros(4, 5)}},
             "param_groups": optim.Adam([p]).state_dict()["param_groups"]}
    with pytest.raises(ValueError, match=r"loaded state dict has state\[0\]\['exp_avg'\] of "
                                         r"shape \[4, 5\] for a parameter of shape \[3\]"):
        optim.Adam([p]).load_state_dict(saved)


# ----------------------------------------------------------------------------- schedulers

def test_scheduler_of_something_that_is_not_an_optimizer():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], step_size=2)


def test_resuming_a_scheduler_without_initial_lr():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in "
                                       r"param_groups\[0\] when resuming"):
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)


def test_lambda_lr_with_a_lambda_per_group_of_the_wrong_count():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5])


def test_plateau_factor_of_one_or_more():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(ValueError, match=r"Factor should be < 1\.0\."):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)


def test_plateau_unknown_mode():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(ValueError, match="mode maximum is unknown!"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="maximum")


def test_plateau_unknown_threshold_mode():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(ValueError, match="threshold mode relative is unknown!"):
        lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="relative")


def test_plateau_min_lr_list_of_the_wrong_length():
    opt = optim.SGD([_param()], lr=0.1)
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1, 0.2])


def test_plateau_after_a_group_was_added_with_per_group_min_lrs():
    opt = optim.SGD([_param()], lr=0.1)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0])
    opt.add_param_group({"params": [_param()]})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match=r"The number of param groups in the `optimizer` "
                                           r"\(2\) differs from when `ReduceLROnPlateau` was "
                                           r"initialized \(1\)"):
        sched.step(2.0)


# ----------------------------------------------------------------------------- wrong kinds

@pytest.mark.parametrize("make,error,message", [
    (lambda p: optim.Adam(p, betas=(0.9,)), ValueError, r"Invalid betas: \(0.9,\) \(expected a "
                                                        r"pair \(beta1, beta2\)\)"),
    (lambda p: optim.Adam(p, betas=(0.9, "x")), TypeError, "Invalid beta parameter at index 1: "
                                                           "'x'"),
    (lambda p: optim.SGD(p, lr="0.1"), TypeError, "Invalid learning rate: '0.1' \\(expected a "
                                                  "float, got str\\)"),
    (lambda p: optim.SGD(p, lr=None), TypeError, "Invalid learning rate: None"),
    (lambda p: optim.Adam(p, eps="1e-8"), TypeError, "Invalid epsilon value: '1e-8'"),
    (lambda p: optim.RMSprop(p, momentum=[0.9]), TypeError, r"Invalid momentum value: \[0.9\]"),
    (lambda p: optim.Adagrad(p, weight_decay="0"), TypeError, "Invalid weight_decay value: '0' "
                                                              "\\(expected a float, got str\\)"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), ValueError, "Invalid momentum_decay value: "
                                                               "-1"),
    (lambda p: optim.NAdam(p, betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index "
                                                              "0: 1.0"),
    (lambda p: optim.RAdam(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.RAdam(p, eps="1"), TypeError, "Invalid epsilon value: '1'"),
    (lambda p: optim.Adamax(p, weight_decay=-0.5), ValueError, "Invalid weight_decay value: "
                                                                "-0.5"),
    (lambda p: optim.Adamax(p, betas=(0.9, 1.5)), ValueError, "Invalid beta parameter at index "
                                                               "1: 1.5"),
    (lambda p: optim.Adadelta(p, rho=1.5), ValueError, "Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta(p, rho="0.9"), TypeError, "Invalid rho value: '0.9'"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_hyper_parameter_of_a_wrong_kind_names_it(make, error, message):
    with pytest.raises(error, match=message):
        make([_param()])


@pytest.mark.parametrize("make,kernel", [(lambda p: optim.Adam(p), "adam_update"),
                                         (lambda p: optim.SGD(p, lr=0.1), "sgd_update")],
                         ids=["Adam", "SGD"])
def test_step_over_an_integer_parameter(make, kernel):
    p = nn.tensor([1, 2])
    opt = make([p])                     # torch accepts it too, and fails at the step
    p.grad = nn.tensor([1, 1])
    with pytest.raises(RuntimeError, match=re.escape(
            f"{kernel}: cannot update a parameter of dtype int64; optimizers update floating "
            "point tensors only")):
        opt.step()
    assert p.tolist() == [1, 2]


@pytest.mark.parametrize("make,message", [
    (lambda p: optim.Rprop(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.Rprop(p, etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    (lambda p: optim.Rprop(p, etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
    (lambda p: optim.ASGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.ASGD(p, weight_decay=-1), "Invalid weight_decay value: -1")])
def test_rprop_and_asgd_hyper_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make([_param()])


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD"])
def test_new_optimizers_refuse_differentiable(name):
    with pytest.raises(RuntimeError, match=re.escape(
            "differentiable=True is not supported: nn's optimizer steps run as fused kernels "
            "outside the autograd graph")):
        getattr(optim, name)([_param()], differentiable=True)
