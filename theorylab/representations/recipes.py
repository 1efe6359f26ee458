"""The non-vacuous instance of Thm 3 (``002_530e12373cc142da.txt``), derived: bulk atoms all zero make the
teacher's $\\log Z^*_{bulk}=\\log(n-k)$ exactly, so the teacher's anchor error is 0.

d = 6, contexts $h=(U[-1,1]^5,1)$, n words, k = 2 words of interest with atoms $v_{1,2}=(\\pm1,0,0,0,0,\\log(n-2))$,
teacher anchor $v_0^*=(0,\\dots,0,\\log(n-2))$, $a^*=(1,-1)$, $b^*=0$: $f^*(h)=h_1$. Downstream = contexts with
$|h_1|\\ge\\gamma$ (uniform), pre-training = uniform over all contexts. Student = teacher + $\\mathcal N(0,\\sigma^2)$
noise on context vectors and atoms, anchor refit by least squares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab._extras import require
from theorylab.nn.threads import with_threads
from theorylab.representations.anchor import Thm3Quantities, bulk_logZ, fit_anchor, thm3_quantities
from theorylab.representations.heads import AnchoredHead
from theorylab.representations.loglinear import LogLinearLM

__all__ = ["AnchorRecipe", "anchor_recipe", "perturbed_student"]


@dataclass(frozen=True)
class AnchorRecipe:
    teacher: LogLinearLM
    teacher_head: AnchoredHead
    bulk: np.ndarray
    ds_weights: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def student_head(self, student: LogLinearLM) -> AnchoredHead:
        """The teacher's $(a^*,b^*)$ on the student's anchored logits, $v_0$ refit by least squares with an
        intercept (equivalently: one extra constant coordinate in $v_{-i}$, which keeps the student log-linear)."""
        fit = fit_anchor(student, bulk_logZ(student, self.bulk), intercept=True)
        return AnchoredHead(self.a, self.b, anchor_values=fit.values(student))

    def evaluate(self, student: LogLinearLM, head: AnchoredHead | None = None) -> Thm3Quantities:
        head = self.student_head(student) if head is None else head
        return thm3_quantities(self.teacher, student, self.teacher_head, head, self.bulk, self.ds_weights)


def anchor_recipe(
    n_contexts: int = 4000, n_words: int = 200, gamma: float = 0.5, seed: int = 0, a=(1.0, -1.0)
) -> AnchorRecipe:
    """The instance above; ``a`` = $(a_1,a_2)$ with $a_1>0>a_2$ gives $f^*=a_1\\sigma(h_1)+a_2\\sigma(-h_1)$."""
    if int(n_words) < 3 or int(n_contexts) < 2 or not 0 < gamma < 1:
        raise ValueError("need n_words >= 3, n_contexts >= 2 and 0 < gamma < 1")
    a = np.asarray(a, dtype=float)
    if a.shape != (2,) or not a[0] > 0 > a[1]:
        raise ValueError("a must be (a1, a2) with a1 > 0 > a2")
    rng = np.random.default_rng(seed)
    H = np.hstack([rng.uniform(-1, 1, (int(n_contexts), 5)), np.ones((int(n_contexts), 1))])
    L = np.log(n_words - 2)
    atoms = np.zeros((int(n_words), 6))
    atoms[0] = [1, 0, 0, 0, 0, L]
    atoms[1] = [-1, 0, 0, 0, 0, L]
    teacher = LogLinearLM(H, atoms)
    v0 = np.array([0, 0, 0, 0, 0, L])
    b = np.zeros(2)
    ds = np.abs(H[:, 0]) * np.where(H[:, 0] > 0, a[0], -a[1]) >= gamma
    return AnchorRecipe(teacher, AnchoredHead(a, b, v0), np.arange(2, int(n_words)), ds / ds.sum(), a, b)


def perturbed_student(recipe: AnchorRecipe, sigma: float, rng: np.random.Generator) -> LogLinearLM:
    t = recipe.teacher
    return LogLinearLM(
        t.contexts + rng.normal(0, sigma, t.contexts.shape),
        t.atoms + rng.normal(0, sigma, t.atoms.shape),
        t.weights,
    )


@with_threads(1)  # tiny steps: threads only add contention; the caller's count is given back
def train_student(
    recipe: AnchorRecipe,
    *,
    width: int = 16,
    dim: int = 6,
    steps: int = 300,
    lr: float = 2e-2,
    every: int = 50,
    seed: int = 0,
) -> list[LogLinearLM]:
    """A softmax student trained on the recipe teacher: a one-hidden-layer tanh MLP encodes the raw context (the
    first five teacher coordinates) into $v_{-i}\\in\\mathbb R^{dim}$ (plus a constant coordinate); atoms are free.
    Full-batch Adam on the population cross-entropy (soft teacher targets = KL + H). Returns the student at
    step 0 and every ``every`` steps."""
    torch = require("torch", extra="trained")

    t = recipe.teacher
    g = torch.Generator().manual_seed(int(seed))
    X = torch.as_tensor(t.contexts[:, :5])
    P = torch.as_tensor(t.probs())
    w = torch.as_tensor(t.weights)
    W = (torch.randn(width, 5, generator=g, dtype=torch.float64) / 5**0.5).requires_grad_()
    U = (torch.randn(dim, width, generator=g, dtype=torch.float64) / width**0.5).requires_grad_()
    A = (0.1 * torch.randn(t.n_words, dim + 1, generator=g, dtype=torch.float64)).requires_grad_()
    opt = torch.optim.Adam([W, U, A], lr=lr)

    def contexts():
        return torch.cat([torch.tanh(X @ W.T) @ U.T, torch.ones(X.shape[0], 1, dtype=torch.float64)], dim=1)

    out = []
    for k in range(int(steps) + 1):
        if k % every == 0:
            with torch.no_grad():
                out.append(LogLinearLM(contexts().numpy(), A.detach().numpy().copy(), t.weights))
        if k == steps:
            break
        logp = torch.log_softmax(contexts() @ A.T, dim=1)
        loss = -(w * (P * logp).sum(dim=1)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out
