"""theorylab.landscape: loss landscapes, curvature and the implicit bias of SGD (``000_7523275b422019f8.txt``).

Exact and stochastic Hessian / Gauss-Newton traces, gradient-noise covariance and per-sample gradients
(``hessian``, torch.func); manifolds of minimisers, the Riemannian flow of Thm 3.3 and vectorised SGD chains
(``manifold``); function-preserving embeddings (``embed``) and the shapes they reach (``embed_shapes``, Tables 3-4);
AM-GM rebalancing (``canonical``); the §E flat-vs-memorising pair (``flat_transfer``), the form of the flattest
solutions and random-feature solutions (``flat_features``, Lemmas F.3, F.7, Thm F.6); Assumption 3.1
(``regularity``); the meta-learning adversary of A.4 (``adversary``).
"""

from theorylab.landscape.canonical import balance_rescalings, balanced_value
from theorylab.landscape.embed import (
    deepen_transformer,
    mlp_forward,
    random_mlp,
    random_transformer,
    transformer_forward,
    widen_mlp,
    widen_transformer,
)
from theorylab.landscape.flat_transfer import DyckTask, OneLayerSolution, sol1, sol2
from theorylab.landscape.manifold import (
    MinimizerManifold,
    ProductLogitToy,
    riemannian_flow,
    sgd_chains,
    toy_flow_closed_form,
)

# torch-backed parts load on first use, so that importing the numpy parts does not import torch (~6 s)
_LAZY = {
    "TraceEstimate": "theorylab.landscape.hessian",
    "cross_entropy_loss": "theorylab.landscape.hessian",
    "flatten_params": "theorylab.landscape.hessian",
    "gradient_covariance": "theorylab.landscape.hessian",
    "hessian_matrix": "theorylab.landscape.hessian",
    "per_sample_grads": "theorylab.landscape.hessian",
    "trace_estimator": "theorylab.landscape.hessian",
    "trace_ggn": "theorylab.landscape.hessian",
    "trace_hessian": "theorylab.landscape.hessian",
    "trace_hessian_loop": "theorylab.landscape.hessian",
    "TwoLayerSoftmax": "theorylab.landscape.models",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DyckTask",
    "MinimizerManifold",
    "OneLayerSolution",
    "ProductLogitToy",
    "TraceEstimate",
    "TwoLayerSoftmax",
    "balance_rescalings",
    "balanced_value",
    "cross_entropy_loss",
    "deepen_transformer",
    "flatten_params",
    "gradient_covariance",
    "hessian_matrix",
    "mlp_forward",
    "per_sample_grads",
    "random_mlp",
    "random_transformer",
    "riemannian_flow",
    "sgd_chains",
    "sol1",
    "sol2",
    "toy_flow_closed_form",
    "trace_estimator",
    "trace_ggn",
    "trace_hessian",
    "trace_hessian_loop",
    "transformer_forward",
    "widen_mlp",
    "widen_transformer",
]
