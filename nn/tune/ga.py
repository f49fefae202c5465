"""A genetic tuner: configs are genes (one choice per knob), fitness is speed.

The first generation is random. Each later generation breeds ``pop_size`` new configs (at most
the size of the space) from the ``pop_size`` fastest configs measured so far: two parents are
drawn in proportion to their speed (1 / run time; failed configs have none), each knob takes one
parent's choice (uniform crossover) and then, with probability ``mutation_prob``, a random
choice. Configs already measured are not measured again; when breeding keeps finding them,
random configs fill in.
"""
from __future__ import annotations

from .check import check_int, check_real
from .tuner import Tuner


class GATuner(Tuner):
    """Genetic search over the knob choices of a task."""

    def __init__(self, task, pop_size=16, mutation_prob=0.1, seed=None):
        super().__init__(task, seed)
        pop_size = check_int("GATuner", "pop_size", pop_size, 1, " (configs per generation)")
        self.pop_size = min(pop_size, len(self.space))
        self.mutation_prob = check_real("GATuner", "mutation_prob", mutation_prob, maximum=1.0,
                                        what=" (the chance that a knob takes a random choice)")
        self.scores: dict[int, float] = {}          # config index -> 1 / cost, 0 on error
        self.generation = 0
        self._pending: list[int] = []
        self._dims = [len(knob) for knob in self.space.knobs.values()]

    def next_batch(self, batch_size):
        if not self._pending:
            self._pending = self._next_generation()
            self.generation += 1
        batch, self._pending = self._pending[:batch_size], self._pending[batch_size:]
        return [self.space.get(i) for i in batch]

    def update(self, inputs, results):
        for inp, res in zip(inputs, results):
            self.scores[inp.config.index] = 1.0 / res.cost if res.ok else 0.0

    def _next_generation(self):
        parents = sorted(self.scores, key=self.scores.get, reverse=True)[:self.pop_size]
        weights = [self.scores[i] for i in parents]
        children = []
        if any(weights):
            for _ in range(20 * self.pop_size):
                if len(children) == self.pop_size:
                    break
                mother, father = self.rng.choices(parents, weights=weights, k=2)
                child = self._mutate(self._crossover(mother, father))
                if child not in self.visited and child not in children:
                    children.append(child)
        while len(children) < self.pop_size:
            index = self._random_unvisited(children)
            if index is None:
                break
            children.append(index)
        return children

    def _crossover(self, mother, father):
        genes = zip(self.space.knob_indices(mother), self.space.knob_indices(father))
        return [self.rng.choice(pair) for pair in genes]

    def _mutate(self, genes):
        for pos, dim in enumerate(self._dims):
            if self.rng.random() < self.mutation_prob:
                genes[pos] = self.rng.randrange(dim)
        return self.space.from_knob_indices(genes).index
