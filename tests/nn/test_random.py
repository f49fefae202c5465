"""nn.random: the generator's state saved and restored draws the same numbers again."""
import nn


def test_rng_state_round_trip_repeats_the_draws():
    nn.manual_seed(3)
    nn.rand(5)
    state = nn.get_rng_state()
    assert state.dtype == "uint8" and state.shape == (37,)
    first = nn.randn(4, 3).tolist()
    nn.set_rng_state(state)
    assert nn.randn(4, 3).tolist() == first
    nn.set_rng_state(state.tolist())            # a plain list of the bytes works too
    assert nn.randn(4, 3).tolist() == first


def test_seed_and_initial_seed():
    s = nn.seed()
    a = nn.rand(3).tolist()
    assert nn.initial_seed() == s
    nn.manual_seed(s)
    assert nn.rand(3).tolist() == a

